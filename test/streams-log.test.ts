// The replay log (src/streams/replay.ts EventLog): each entry's text copied into slabs, read back
// as it was appended; entries leave by age, count and bytes, in order; a slab leaves with its last
// entry; an entry larger than a slab gets one of its own; the ring grows past its first size with
// entries wrapped around it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventLog, SLAB_BYTES } from '../src/streams/replay.ts';

const text = (g: number, size: number) => Buffer.from(`${g}:`.padEnd(size, String.fromCharCode(97 + (g % 26))));

test('entries read back as appended, across slabs and a grown ring, and leave by age in order', () => {
  const log = new EventLog({ windowMs: 1000, maxEntries: 1_000_000, maxBytes: 1 << 30 });
  const sizes: number[] = [];
  let now = 0;
  // 5000 entries of 100 to 1099 bytes: several slabs, and the ring grows from 1024 entries.
  for (let g = 0; g < 5000; g++) {
    const size = 100 + ((g * 7919) % 1000);
    sizes.push(size);
    assert.equal(log.append(g % 4, text(g, size), now), g);
    if (g % 10 === 0) now++;
  }
  assert.equal(log.size, 5000);
  for (let g = 0; g < 5000; g++) {
    assert.ok(log.shared(g).equals(text(g, sizes[g]!)), `entry ${g}`);
    assert.equal(log.type(g), g % 4);
  }
  // Filled in turn: an entry that does not fit in what is left of a slab starts the next.
  let expected = 1;
  let used = 0;
  for (const size of sizes) {
    if (used + size > SLAB_BYTES) [expected, used] = [expected + 1, 0];
    used += size;
  }
  assert.equal(log.slabs, expected);
  assert.ok(expected >= 3);
  // Entry g was appended at ceil(g / 10) ms; at 1101 ms the window (1000 ms) keeps those of 101 ms on.
  log.append(0, text(5000, 10), 1101);
  assert.equal(log.first, 1001);
  for (const g of [1001, 2500, 4999, 5000]) assert.ok(log.shared(g).equals(text(g, g === 5000 ? 10 : sizes[g]!)));
  // Everything older than the window leaves, and with it every slab but the one being filled.
  log.append(1, text(5001, 10), 10_000);
  assert.equal(log.size, 1);
  assert.equal(log.first, 5001);
  assert.equal(log.slabs, 1);
  assert.ok(log.shared(5001).equals(text(5001, 10)));
});

test('count and bytes bound the log; an entry larger than a slab has its own', () => {
  const byCount = new EventLog({ windowMs: 60_000, maxEntries: 100, maxBytes: 1 << 30 });
  for (let g = 0; g < 250; g++) byCount.append(0, text(g, 50), 0);
  assert.deepEqual([byCount.first, byCount.end, byCount.size], [150, 250, 100], 'at most 100 held');
  assert.ok(byCount.shared(150).equals(text(150, 50)));

  const byBytes = new EventLog({ windowMs: 60_000, maxEntries: 1_000_000, maxBytes: 3 * SLAB_BYTES });
  const big = text(0, SLAB_BYTES + 5);
  byBytes.append(2, big, 0);
  assert.ok(byBytes.shared(0).equals(big));
  for (let g = 1; g <= 3000; g++) byBytes.append(0, text(g, 1000), 0);
  assert.ok(byBytes.first > 0, 'the big one left for bytes');
  let held = 0;
  for (let g = byBytes.first; g < byBytes.end; g++) held += byBytes.shared(g).length;
  assert.ok(held <= 3 * SLAB_BYTES);
  assert.ok(byBytes.slabs <= 4, `slabs held: ${byBytes.slabs}`);
  assert.ok(byBytes.shared(3000).equals(text(3000, 1000)));
});
