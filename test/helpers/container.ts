// Podman for the image test (test/image.deploy.ts): Debian's podman and runc, run as root with the
// project's own containers.conf (deploy/podman/containers.conf: no ulimits to raise, runc, cgroupfs,
// which this kind of machine needs), and a stand-in for the official Node base image when it cannot
// be pulled (no registry but npm's and Debian's here): the same name, the same layout (node and npm
// in /usr/local, a `node` user of uid 1000), made of this machine's files and the project's own
// pinned Node (the `node` devDependency).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BASE_IMAGE = 'docker.io/library/node:24-slim';
const CONF = path.join(ROOT, 'deploy/podman/containers.conf');

/** Runs podman with the project's configuration; its stdout, or a throw with its output when it fails. */
export function podman(args: string[], options: { input?: Buffer; timeoutMs?: number } = {}): string {
  const result = podmanRun(args, options);
  if (result.error !== undefined) throw result.error;
  if (result.status !== 0) throw new Error(`podman ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

function podmanRun(args: string[], options: { input?: Buffer; timeoutMs?: number } = {}) {
  return spawnSync('podman', args, {
    cwd: ROOT, env: { ...process.env, CONTAINERS_CONF: CONF }, encoding: 'utf8',
    input: options.input, timeout: options.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024,
  });
}

/** Why the image test cannot run here, or undefined when it can. */
export function podmanMissing(): string | undefined {
  if (spawnSync('podman', ['--version']).error !== undefined) return 'not installed';
  if (process.getuid?.() !== 0) return 'run as root only here, and this is not root';
  return undefined;
}

/** Build options that reuse this machine's npm cache (filled by the project's own `npm ci`). */
export function npmCacheVolume(): string[] {
  const cache = path.join(homedir(), '.npm/_cacache');
  return existsSync(cache) ? ['-v', `${cache}:/root/.npm/_cacache`] : [];
}

/** The official base image if present (pulled earlier, or built here before), else the stand-in built now. */
export function ensureBaseImage(): void {
  if (podmanRun(['image', 'exists', BASE_IMAGE]).status === 0) return;
  const root = mkdtempSync(path.join(tmpdir(), 'fleet-base-'));
  try {
    const dir = (p: string, mode = 0o755) => {
      mkdirSync(path.join(root, p), { recursive: true });
      chmodSync(path.join(root, p), mode);
    };
    const copy = (from: string, to = from) => {
      mkdirSync(path.dirname(path.join(root, to)), { recursive: true });
      copyFileSync(realpathSync(from), path.join(root, to));
      chmodSync(path.join(root, to), 0o755);
    };
    for (const d of ['bin', 'etc', 'usr/bin', 'usr/local/bin', 'usr/local/lib', 'root', 'home/node']) dir(d);
    dir('tmp', 0o1777);
    // The project's pinned Node 24, and the machine's npm.
    const require = createRequire(path.join(ROOT, 'package.json'));
    copy(path.join(path.dirname(require.resolve('node/package.json')), 'bin/node'), 'usr/local/bin/node');
    const npm = path.dirname(path.dirname(realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())));
    cpSync(npm, path.join(root, 'usr/local/lib/node_modules/npm'), { recursive: true, dereference: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(root, 'usr/local/bin/npm'));
    // A shell for RUN, env for npm's shebang, the libraries they and Node link, CA certificates.
    copy('/bin/dash', 'bin/sh');
    copy('/usr/bin/env');
    for (const lib of ['ld-linux-x86-64.so.2']) copy(`/lib64/${lib}`);
    for (const lib of ['libc.so.6', 'libm.so.6', 'libdl.so.2', 'libpthread.so.0', 'libstdc++.so.6', 'libgcc_s.so.1']) copy(`/lib/x86_64-linux-gnu/${lib}`);
    mkdirSync(path.join(root, 'etc/ssl/certs'), { recursive: true });
    copyFileSync('/etc/ssl/certs/ca-certificates.crt', path.join(root, 'etc/ssl/certs/ca-certificates.crt'));
    writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n');
    writeFileSync(path.join(root, 'etc/group'), 'root:x:0:\nnode:x:1000:\n');
    writeFileSync(path.join(root, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
    execFileSync('chown', ['-R', '1000:1000', path.join(root, 'home/node')]);
    const tar = spawnSync('tar', ['-C', root, '-c', '.'], { maxBuffer: 1024 * 1024 * 1024 });
    if (tar.status !== 0) throw new Error(`tar: ${tar.stderr.toString()}`);
    podman([
      'import', '--change', 'ENV PATH=/usr/local/bin:/usr/bin:/bin', '--change', 'ENV NODE_VERSION=24',
      // This machine's own certificate authorities (its registry access may pass a proxy that signs with one).
      '--change', 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt', '--change', 'CMD ["node"]', '-', BASE_IMAGE,
    ], { input: tar.stdout });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
