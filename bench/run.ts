// `npm run bench`: every bench/*.bench.ts, one after another, each in its own process (so one
// benchmark's server and heap never colour the next). `npm run bench -- telemetry` runs only those
// whose names start so. Exits non-zero if any failed, after running the rest.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => only.length === 0 || only.some((wanted) => name.startsWith(wanted)))
  .sort();
if (files.length === 0) {
  console.error(`no benchmark matches ${only.join(', ')}`);
  process.exit(2);
}

const started = Date.now();
const failed: string[] = [];
for (const name of files) {
  console.log(`\n## ${name}\n`);
  const result = spawnSync(process.execPath, [fileURLToPath(new URL(name, import.meta.url))], { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`\n${name} failed (${result.signal ?? `exit ${result.status}`})`);
    failed.push(name);
  }
}
console.log(`\n${files.length} benchmarks in ${Math.round((Date.now() - started) / 1000)} s${failed.length > 0 ? `; failed: ${failed.join(', ')}` : ''}`);
if (failed.length > 0) process.exit(1);
