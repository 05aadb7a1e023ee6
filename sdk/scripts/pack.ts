// The package as `npm pack` makes it: JavaScript. The repository runs src/ as it is (Node strips
// the types of files outside node_modules, and bundlers take TypeScript), but Node strips none
// under node_modules, and Node before 22.18 none at all: a project that installs the package gets
// dist/ instead, src/ compiled by tsc into JavaScript modules with declarations beside them.
//
// npm runs `before` as prepack and `after` as postpack (so `npm publish` too): `before` builds dist/
// and writes the package.json that goes in the tarball, whose exports lead to dist/; `after` puts
// the repository's package.json back and removes dist/. Meanwhile the repository's package.json
// waits in .packing/, a directory that is also the lock: a second pack of the same checkout waits
// for the first, rather than take the packed package.json for the repository's.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const SDK = fileURLToPath(new URL('../', import.meta.url));
const MANIFEST = `${SDK}package.json`;
const LOCK = `${SDK}.packing/`;
const KEPT = `${LOCK}package.json`;
const DIST = `${SDK}dist/`;
/** A pack takes seconds: a lock older than this was left by one that was interrupted. */
const ABANDONED_AFTER_MS = 5 * 60_000;

/**
 * The package.json packed: the repository's, with its exports leading to the JavaScript, which
 * runs on Node 20 (the repository's TypeScript needs Node 24). Node 20 has no global WebSocket,
 * so live streams there take one as an option.
 */
export function packedManifest(repository: Record<string, unknown>): Record<string, unknown> {
  const packed: Record<string, unknown> = {
    ...repository,
    exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    types: './dist/index.d.ts',
    files: ['dist'],
    engines: { node: '>=20' },
  };
  // Its own scripts are for packing, and a packed package.json is known by their absence.
  delete packed.scripts;
  return packed;
}

/** src/ compiled into dist/: ES2024 modules whose imports end in .js, and their declarations. */
function build(): void {
  rmSync(DIST, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const compiled = spawnSync(process.execPath, [
    tsc, '-p', `${SDK}tsconfig.json`, '--noEmit', 'false', '--allowImportingTsExtensions', 'false',
    '--rewriteRelativeImportExtensions', '--declaration', '--rootDir', `${SDK}src`, '--outDir', DIST,
  ], { stdio: 'inherit' });
  if (compiled.status !== 0) throw new Error(`tsc failed (${compiled.status ?? compiled.signal})`);
  // tsc emits no .d.ts for a .d.ts; types.d.ts imports this one.
  copyFileSync(`${SDK}src/schema.d.ts`, `${DIST}schema.d.ts`);
  // tsc rewrites the relative imports of the JavaScript, not those of the declarations, which keep
  // the sources' .ts and .d.ts and add extensionless ones (`import("./schema")`, for types it
  // spells out): a consumer's TypeScript under node16/nodenext resolution refuses the last and
  // looks for sources that are not there for the first. Each becomes .js, which it takes to mean
  // the .d.ts beside it.
  for (const name of readdirSync(DIST)) {
    if (!name.endsWith('.d.ts') || name === 'schema.d.ts') continue;
    const file = `${DIST}${name}`;
    writeFileSync(file, readFileSync(file, 'utf8').replace(/(from |import\()(['"])(\.\/[a-z-]+)(?:\.d\.ts|\.ts)?\2/g, '$1$2$3.js$2'));
  }
}

/** Takes the lock; one left by a pack that was interrupted is released first, which undoes it. */
async function lock(): Promise<void> {
  const deadline = Date.now() + ABANDONED_AFTER_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let since: number;
    try {
      since = statSync(LOCK).mtimeMs;
    } catch {
      continue; // released meanwhile
    }
    if (Date.now() - since > ABANDONED_AFTER_MS) after();
    else if (Date.now() > deadline) throw new Error(`${LOCK} is still there: another pack of this SDK has not finished`);
    else await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function before(): Promise<void> {
  await lock();
  try {
    const repository = readFileSync(MANIFEST, 'utf8');
    const manifest = JSON.parse(repository) as Record<string, unknown>;
    if (manifest.scripts === undefined) throw new Error(`${MANIFEST} is a packed one, not the repository's: restore it`);
    writeFileSync(KEPT, repository);
    build();
    writeFileSync(MANIFEST, `${JSON.stringify(packedManifest(manifest), null, 2)}\n`);
  } catch (error) {
    after();
    throw error;
  }
}

function after(): void {
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
  rmSync(DIST, { recursive: true, force: true });
  rmSync(LOCK, { recursive: true, force: true });
}

if (import.meta.main) {
  const step = process.argv[2];
  if (step === 'before') await before();
  else if (step === 'after') after();
  else throw new Error(`usage: node scripts/pack.ts before|after (not ${step ?? 'nothing'})`);
}
