// The configuration reference (docs/OPERATIONS.md, "Configuration") lists every variable
// src/config.ts reads, with the default it applies, and no variable it does not read.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { VARIABLES } from '../src/config.ts';

const ops = readFileSync(new URL('../docs/OPERATIONS.md', import.meta.url), 'utf8');

test('docs/OPERATIONS.md lists every variable with its default, in the order src/config.ts reads them', () => {
  const section = ops.slice(ops.indexOf('## Configuration\n'), ops.indexOf('\n## ', ops.indexOf('## Configuration\n') + 1));
  const rows = [...section.matchAll(/^\| `((?:FLEET|OTEL)_[A-Z0-9_]+)` \| ([^|]*) \|/gm)].map((m) => [m[1]!, m[2]!.trim()] as const);
  assert.deepEqual(rows.map(([name]) => name), Object.keys(VARIABLES));
  for (const [name, documented] of rows) {
    const { default: applied } = VARIABLES[name as keyof typeof VARIABLES] as { default?: string };
    // No literal default (none, or one derived from another variable): said in words.
    if (applied === undefined || applied === '') assert.notEqual(documented, '', `${name}: its default is not said`);
    else assert.ok(documented.includes(`\`${applied}\``), `${name}: default ${applied}, documented as ${documented}`);
  }
});
