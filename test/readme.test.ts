// README.md as a reader meets it: every command of its ```sh blocks, in the order written, typed
// into one bash against a real Fleet on a real port, with what the reader's shell holds: the
// address and first admin key, what the README assigns, the variables it tells the reader to set
// from an answer (a comment `# GROUP=its id` on the command that answers it), and an authenticator
// app's code. A variable the README never sets is an error of the shell (`set -u`). Each command
// must exit 0 and, for curl, answer below 400, unless its comment starts with the status it
// answers (`# 409`) or `refused`. The commands the test cannot run as a reader would are listed
// in NOT_RUN, each with its reason.
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { test } from 'node:test';
import { stepAt, totpCode } from '../src/people/totp.ts';
import { freePort } from './helpers/oauth.ts';
import { tempDir, withTimeout } from './helpers/process.ts';
import { createStreamApp } from './helpers/streams.ts';

const README = new URL('../README.md', import.meta.url);

const mosquittoPub = spawnSync('mosquitto_pub', ['--help'], { stdio: 'ignore' }).error === undefined;

/** Commands not run, found by a part of their text; each must still be in the README. */
const NOT_RUN: { has: string; why: string }[] = [
  { has: 'npm install && npm start', why: 'the test serves the same Fleet itself, on ports of its own' },
  { has: 'export FLEET=', why: 'the reader\'s own address and printed key: the shell starts with the test Fleet\'s' },
  { has: 'npx node -e \'const ws = new WebSocket(', why: 'a live stream prints until it is stopped' },
  { has: '"$FLEET/v2/sso"', why: 'single sign-on needs the organization\'s OpenID provider (login.example.com)' },
  { has: 'npm test', why: 'the whole suite, this test among it' },
  { has: 'npm run check', why: 'the whole suite, this test among it' },
  { has: 'npx node --test', why: 'another suite' },
  { has: 'npm run bench', why: 'benchmarks run for minutes' },
  ...(mosquittoPub ? [] : [{ has: 'mosquitto_pub ', why: 'no mosquitto_pub on this machine to publish with' }]),
];

interface Command {
  /** README line of its first line. */
  line: number;
  /** As written, comment included. */
  text: string;
  /** What bash runs: the command without its comment. */
  code: string;
  /** The comment, without `#`, or ''. */
  comment: string;
}

/** Where an unquoted `#` after whitespace starts a comment, as in bash; -1 without one. */
function commentStart(text: string): number {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"') i++;
    } else if (c === '\'' || c === '"') quote = c;
    else if (c === '\\') i++;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return i;
  }
  return -1;
}

/** Every command of the ```sh blocks, in order; comment-only lines (sample answers) are not commands. */
function readmeCommands(markdown: string): Command[] {
  const commands: Command[] = [];
  const lines = markdown.split('\n');
  let inSh = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!inSh) {
      inSh = line.trim() === '```sh';
      continue;
    }
    if (line.trim() === '```') {
      inSh = false;
      continue;
    }
    const first = i;
    let text = line;
    while (text.endsWith('\\') && i + 1 < lines.length) text = `${text}\n${lines[++i]}`;
    const at = commentStart(text);
    const code = (at === -1 ? text : text.slice(0, at)).trim();
    if (code === '') continue;
    commands.push({ line: first + 1, text, code, comment: at === -1 ? '' : text.slice(at + 1).trim() });
  }
  return commands;
}

/**
 * `NAME=its field.path` in a comment: the variables the reader sets from that command's answer.
 * One in quotes or backticks is an example of the form, not an assignment.
 */
function assignments(comment: string): { name: string; path: string }[] {
  return [...comment.replace(/"[^"]*"|`[^`]*`/g, '').matchAll(/\b([A-Z][A-Z0-9_]*)=its ([A-Za-z_][\w.]*\w)/g)].map((m) => ({ name: m[1]!, path: m[2]! }));
}

/** The status the comment says the command answers (`# 409 …`), 'refused' for any refusal, or undefined. */
function expectedRefusal(comment: string): number | 'refused' | undefined {
  const match = /^(?:refused\b|([45]\d\d)\b)/.exec(comment);
  if (match === null) return undefined;
  return match[1] === undefined ? 'refused' : Number(match[1]);
}

/** The answer as JSON, or undefined. */
function json(stdout: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    return undefined;
  }
}

/** A field of a JSON answer (`invitation.token`, `alerts.0.id`), or undefined. */
function field(answer: unknown, path: string): unknown {
  let value = answer;
  for (const part of path.split('.')) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[part] : undefined;
  return value;
}

/** Single-quoted for bash. */
function quoted(value: string): string {
  return `'${value.replaceAll('\'', '\'\\\'\'')}'`;
}

interface Outcome {
  exit: number;
  stdout: string;
  stderr: string;
  /** The HTTP status of the command's (last) curl, if it ran one. */
  status: number | undefined;
}

/**
 * One bash, as the reader's terminal: variables live on from command to command. After each
 * command the shell writes a marker with its exit code to stdout and one to stderr; curl also
 * writes the HTTP status to stderr.
 */
class Shell {
  readonly #child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly #mark = `readme-${randomBytes(8).toString('hex')}`;
  #stdout = '';
  #stderr = '';
  #ended = false;
  #wake: (() => void) | undefined;

  constructor(cwd: string, env: Record<string, string>) {
    this.#child = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stdout.setEncoding('utf8').on('data', (chunk: string) => this.#append('out', chunk));
    this.#child.stderr.setEncoding('utf8').on('data', (chunk: string) => this.#append('err', chunk));
    this.#child.once('close', () => {
      this.#ended = true;
      this.#wake?.();
    });
    this.#child.stdin.write(`set -u\ncurl() { command curl -w '%{stderr}\\n${this.#mark} status %{http_code}\\n' "$@"; }\n`);
  }

  #append(stream: 'out' | 'err', chunk: string): void {
    if (stream === 'out') this.#stdout += chunk;
    else this.#stderr += chunk;
    this.#wake?.();
  }

  set(name: string, value: string): void {
    this.#child.stdin.write(`${name}=${quoted(value)}\n`);
  }

  run(code: string): Promise<Outcome> {
    const done = new RegExp(`\\n?${this.#mark} exit (\\d+)\\n`);
    const errDone = new RegExp(`\\n?${this.#mark} end\\n`);
    this.#child.stdin.write(`{ ${code}\n} </dev/null; printf '\\n%s exit %d\\n' ${this.#mark} $?; printf '\\n%s end\\n' ${this.#mark} >&2\n`);
    return withTimeout(new Promise<Outcome>((resolve) => {
      const check = () => {
        const out = done.exec(this.#stdout);
        const err = errDone.exec(this.#stderr);
        if (out !== null && err !== null) {
          const stdout = this.#stdout.slice(0, out.index);
          const stderr = this.#stderr.slice(0, err.index);
          this.#stdout = this.#stdout.slice(out.index + out[0].length);
          this.#stderr = this.#stderr.slice(err.index + err[0].length);
          this.#wake = undefined;
          const statuses = [...stderr.matchAll(new RegExp(`${this.#mark} status (\\d+)`, 'g'))].map((m) => Number(m[1]));
          resolve({ exit: Number(out[1]), stdout, stderr: stderr.replace(new RegExp(`\\n?${this.#mark} status \\d+\\n`, 'g'), ''), status: statuses.at(-1) });
        } else if (this.#ended) {
          this.#wake = undefined;
          resolve({ exit: this.#child.exitCode ?? -1, stdout: this.#stdout, stderr: `${this.#stderr}\n(the shell ended)`, status: undefined });
        }
      };
      this.#wake = check;
      check();
    }), 15_000, `the command to finish: ${code}`);
  }

  close(): void {
    if (!this.#ended) this.#child.kill('SIGKILL');
  }
}

test('README.md: every shell command, in the order written, against a running Fleet', { timeout: 120_000 }, async (t) => {
  const commands = readmeCommands(readFileSync(README, 'utf8'));
  for (const skip of NOT_RUN) assert.ok(commands.some((c) => c.code.includes(skip.has)), `NOT_RUN names no README command: ${skip.has}`);

  // The MQTT listener on a port of its own: the README's 1883 is a default start's, maybe taken here.
  const mqttPort = await freePort();
  const fleet = await createStreamApp({ env: { FLEET_MQTT_PORT: String(mqttPort), FLEET_MQTT_HOST: '127.0.0.1' } });
  t.after(() => fleet.close());
  const cwd = tempDir(t, 'fleet-readme-');
  const shell = new Shell(cwd, {
    PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, USER: process.env.USER ?? 'reader', FLEET: fleet.publicUrl, FLEET_KEY: fleet.adminKey,
  });
  t.after(() => shell.close());

  const notRun: string[] = [];
  let secret: string | undefined;
  for (const command of commands) {
    const skip = NOT_RUN.find((s) => command.code.includes(s.has));
    if (skip !== undefined) {
      notRun.push(`line ${command.line}: ${command.code.slice(0, 60)} (${skip.why})`);
      continue;
    }
    // The reader's authenticator app, given the secret, shows the code of the moment.
    if (secret !== undefined && command.code.includes('$CODE')) shell.set('CODE', totpCode(secret, stepAt(Date.now())));
    const outcome = await shell.run(command.code.replace(/-p 1883\b/, `-p ${mqttPort}`));
    const report = `README.md line ${command.line}:\n${command.text}\nexit ${outcome.exit}, HTTP ${outcome.status ?? '-'}\n` +
      `--- stdout:\n${outcome.stdout}\n--- stderr:\n${outcome.stderr}`;
    assert.equal(outcome.exit, 0, report);
    const expected = expectedRefusal(command.comment);
    if (outcome.status !== undefined) {
      if (expected === undefined) assert.ok(outcome.status < 400, report);
      else if (expected === 'refused') assert.ok(outcome.status >= 400, `expected a refusal; ${report}`);
      else assert.equal(outcome.status, expected, report);
    }
    const answer = json(outcome.stdout);
    for (const { name, path } of assignments(command.comment)) {
      const value = field(answer, path);
      assert.ok(typeof value === 'string' || typeof value === 'number', `${name}=its ${path}: the answer has no such field; ${report}`);
      shell.set(name, String(value));
    }
    // An answer for an authenticator app: the reader's app takes the secret from its otpauth URL.
    const otpauth = /^otpauth:\/\/totp\/[^?]*\?(.*)$/.exec(String(field(answer, 'otpauthUrl')));
    if (otpauth !== null) secret = new URLSearchParams(otpauth[1]).get('secret') ?? undefined;
  }
  t.diagnostic(`not run:\n${notRun.join('\n')}`);
});
