// Which geofences hold a point: a box index narrows the geofences to those whose box holds it, and
// only those get the exact test (geometry.ts).
//
// Two box indexes share the boxes. Most geofences of a fleet are small (depots, customers, stops:
// tens to hundreds of meters), so the boxes no larger than a few cells of a grid go into a hashed
// grid: the point's cell is found in one hash probe, and its short list of boxes is checked from
// one Float64Array, so a lookup touches a few cache lines whatever the number of geofences. The
// cell size follows the boxes (twice the median box side), so a city of 25 m circles and a
// country of regions both get cells of their own scale. Boxes larger than that (a whole city, a
// country) go into flatbush, a static packed R-tree in typed arrays, rather than rbush (dynamic
// inserts and removals): a geofence change is rare and flatbush's lookups are faster (no node
// objects to chase) in a fraction of rbush's memory.
//
// Both are static, so they are rebuilt on change, but not on every change: new boxes wait in a
// short list that lookups scan directly, and removed ones are skipped by a flag, until either
// grows enough to pay for a rebuild (O(n log n) in the boxes, a few milliseconds for 10,000
// geofences), which the next lookup then does. So loading thousands of geofences costs one
// rebuild, and creations between lookups one per PENDING_LIMIT of them, never one each. A rebuild
// reads boxes only: each polygon stays in the typed arrays it was packed into when it was added
// (compact.ts), however many rebuilds follow, so a change costs its own geofence's positions and
// not the organization's.
import Flatbush from 'flatbush';
import { BOUNDARY_EPS_DEG, circleHolds, type BBox } from './geometry.ts';
import { type CompactGeometry, type CompactShape, compactContains, compactGeometry, compactPolygonContains } from './compact.ts';
import type { GeofenceGeometry } from './schema.ts';

/** New boxes scanned linearly before a rebuild folds them into the tree. */
const PENDING_LIMIT = 64;
/** A box covering more grid cells than this goes into the tree instead. */
const MAX_CELLS_PER_BOX = 16;
/** The smallest cell side, in degrees (about 1 m): keeps cell numbers within 32-bit integers. */
const MIN_CELL_DEG = 1e-5;

/**
 * Boxes by grid cell: an open-addressed hash table of the non-empty cells (linear probing), each
 * slot holding its cell's coordinates and its range in one array of item numbers.
 */
interface Grid {
  cell: number;
  mask: number;
  cellX: Int32Array;
  cellY: Int32Array;
  /** Start of the slot's items in `members`, and their count (0: an empty slot). */
  start: Int32Array;
  count: Int32Array;
  members: Int32Array;
}

const hashCell = (cx: number, cy: number): number => {
  const h = Math.imul(cx, 0x9e3779b1) ^ Math.imul(cy, 0x85ebca77);
  return h ^ (h >>> 15);
};

interface Entry {
  id: string;
  compiled: CompactGeometry;
  /** False once removed or replaced: its boxes still in the tree are skipped. */
  live: boolean;
  /** Its number in the per-entry arrays (entryLive, entrySeen, entryIds); renumbered on rebuild. */
  no: number;
}

/** Numbers kept per item of the grid and the tree: its box, then a circle's four numbers. */
const STRIDE = 8;
const KIND_POLYGON = 0;
const KIND_CIRCLE = 1;

/** One box of one shape of one geofence. */
interface Item {
  entry: Entry;
  shape: CompactShape;
  box: BBox;
}

const NO_POLYGON = new Float64Array(0);
const NO_BANDS = new Int32Array(0);

export interface GeofenceIndex {
  /**
   * Adds a geofence, or replaces the geometry of one with the same id. The geometry must be valid;
   * it may come prepared (compactGeometry), so that the caller can spread that work out.
   */
  set(id: string, geometry: GeofenceGeometry | CompactGeometry): void;
  /** Removes a geofence; false if there was none with that id. */
  remove(id: string): boolean;
  has(id: string): boolean;
  readonly size: number;
  /** Ids of the geofences whose box holds the point (a superset of those that hold it). */
  candidates(lng: number, lat: number): string[];
  /**
   * Ids of the geofences that hold the point (boundary inclusive), in no particular order.
   * `filter`, when given, is asked first, so geofences that do not apply are never tested.
   */
  containing(lng: number, lat: number, filter?: (id: string) => boolean): string[];
}

export function createGeofenceIndex(): GeofenceIndex {
  const entries = new Map<string, Entry>();
  let tree: Flatbush | undefined;
  /** Every item of the tree and the grid; the tree's own numbers index `treeIndex`. */
  let treeItems: Item[] = [];
  let treeIndex: Int32Array = new Int32Array(0);
  let grid: Grid | undefined;
  // What a lookup reads of an item of the grid or the tree, packed so that a box check and a
  // circle test read one cache line and chase no pointer: STRIDE numbers per item (its box, then
  // for a circle its center and radius as CircleShape has them), its kind and its entry's number.
  let packed: Float64Array = new Float64Array(0);
  let itemKind: Uint8Array = new Uint8Array(0);
  let itemEntry: Int32Array = new Int32Array(0);
  /** Per item, its polygon's arrays as made when it was added (empty for a circle). */
  let itemPolygon: Float64Array[] = [];
  let itemBands: Int32Array[] = [];
  // Per entry, by number: whether it is live, the lookup that last reported it (so a geofence
  // with several boxes is reported once), and its id.
  let entryLive: Uint8Array = new Uint8Array(64);
  let entrySeen: Int32Array = new Int32Array(64);
  let entryIds: string[] = [];
  let nextNo = 0;
  let pending: Item[] = [];
  /** Items in the tree or the grid whose entry is no longer live. */
  let dead = 0;
  let lookup = 0;

  function number(entry: Entry): void {
    if (nextNo === entryLive.length) {
      const live = new Uint8Array(nextNo * 2);
      live.set(entryLive);
      entryLive = live;
      const seen = new Int32Array(nextNo * 2);
      seen.set(entrySeen);
      entrySeen = seen;
    }
    entry.no = nextNo++;
    entryLive[entry.no] = 1;
    entrySeen[entry.no] = 0;
    entryIds[entry.no] = entry.id;
  }

  function rebuild(): void {
    const items: Item[] = [];
    for (const item of treeItems) if (item.entry.live) items.push(item);
    for (const item of pending) if (item.entry.live) items.push(item);
    pending = [];
    dead = 0;
    treeItems = items;
    // Renumber the live entries, so removed ones leave nothing behind.
    nextNo = 0;
    entryIds = [];
    entryLive = new Uint8Array(Math.max(64, entries.size * 2));
    entrySeen = new Int32Array(entryLive.length);
    for (const entry of entries.values()) number(entry);
    packed = new Float64Array(items.length * STRIDE);
    itemKind = new Uint8Array(items.length);
    itemEntry = new Int32Array(items.length);
    itemPolygon = new Array<Float64Array>(items.length);
    itemBands = new Array<Int32Array>(items.length);
    items.forEach(({ entry, shape, box }, i) => {
      const p = i * STRIDE;
      packed.set(box, p);
      itemEntry[i] = entry.no;
      if (shape.kind === 'circle') {
        itemKind[i] = KIND_CIRCLE;
        itemPolygon[i] = NO_POLYGON;
        itemBands[i] = NO_BANDS;
        packed[p + 4] = shape.lng;
        packed[p + 5] = shape.latRad;
        packed[p + 6] = shape.cosLat;
        packed[p + 7] = shape.maxHav;
      } else {
        itemKind[i] = KIND_POLYGON;
        itemPolygon[i] = shape.data;
        itemBands[i] = shape.bands;
      }
    });
    tree = undefined;
    grid = undefined;
    if (items.length === 0) return;

    const sides = Float64Array.from(items, ({ box }) => Math.max(box[2] - box[0], box[3] - box[1])).sort();
    const cell = Math.max(MIN_CELL_DEG, 2 * sides[sides.length >> 1]!);
    const inTree: number[] = [];
    // Keyed by a number made of both cell coordinates (each well within ±2^25, see MIN_CELL_DEG).
    const byCell = new Map<number, { cx: number; cy: number; members: number[] }>();
    for (let i = 0; i < items.length; i++) {
      const b = i * STRIDE;
      const x0 = Math.floor(packed[b]! / cell), y0 = Math.floor(packed[b + 1]! / cell);
      const x1 = Math.floor(packed[b + 2]! / cell), y1 = Math.floor(packed[b + 3]! / cell);
      if ((x1 - x0 + 1) * (y1 - y0 + 1) > MAX_CELLS_PER_BOX) {
        inTree.push(i);
        continue;
      }
      for (let cx = x0; cx <= x1; cx++) {
        for (let cy = y0; cy <= y1; cy++) {
          const key = (cx + 2 ** 25) * 2 ** 26 + (cy + 2 ** 25);
          let at = byCell.get(key);
          if (at === undefined) byCell.set(key, (at = { cx, cy, members: [] }));
          at.members.push(i);
        }
      }
    }
    if (byCell.size > 0) {
      let capacity = 16;
      while (capacity < byCell.size * 2) capacity *= 2;
      const g: Grid = {
        cell, mask: capacity - 1,
        cellX: new Int32Array(capacity), cellY: new Int32Array(capacity),
        start: new Int32Array(capacity), count: new Int32Array(capacity),
        members: new Int32Array([...byCell.values()].reduce((sum, c) => sum + c.members.length, 0)),
      };
      let next = 0;
      for (const { cx, cy, members } of byCell.values()) {
        let slot = hashCell(cx, cy) & g.mask;
        while (g.count[slot] !== 0) slot = (slot + 1) & g.mask;
        g.cellX[slot] = cx;
        g.cellY[slot] = cy;
        g.start[slot] = next;
        g.count[slot] = members.length;
        g.members.set(members, next);
        next += members.length;
      }
      grid = g;
    }
    if (inTree.length > 0) {
      const built = new Flatbush(inTree.length);
      for (const i of inTree) built.add(packed[i * STRIDE]!, packed[i * STRIDE + 1]!, packed[i * STRIDE + 2], packed[i * STRIDE + 3]);
      built.finish();
      tree = built;
      treeIndex = Int32Array.from(inTree);
    }
  }

  function retire(entry: Entry): void {
    entry.live = false;
    entryLive[entry.no] = 0;
    dead += entry.compiled.shapes.reduce((sum, shape) => sum + shape.boxes.length, 0);
  }

  // The lookup in progress. A lookup allocates nothing but its answer: the tree calls one callback
  // made once, which reads the query from here (a closure per lookup cost as much as the tree).
  let queryLng = 0;
  let queryLat = 0;
  let exact = true;
  let accept: ((id: string) => boolean) | undefined;
  let found: string[] = [];

  /** Entry `e`'s item, by its packed number `i` (grid and tree) or, pending, by its shape (i = -1). */
  function consider(e: number, i: number, shape: CompactShape | undefined): void {
    if (entryLive[e] === 0 || entrySeen[e] === lookup) return;
    if (accept !== undefined && !accept(entryIds[e]!)) {
      entrySeen[e] = lookup;
      return;
    }
    if (exact) {
      // Only a hit marks the entry: another part of the same MultiPolygon may still hold the point.
      if (i < 0) {
        if (!compactContains(shape!, queryLng, queryLat)) return;
      } else if (itemKind[i] === KIND_CIRCLE) {
        const p = i * STRIDE;
        if (!circleHolds(packed[p + 4]!, packed[p + 5]!, packed[p + 6]!, packed[p + 7]!, queryLng, queryLat)) return;
      } else if (!compactPolygonContains(itemPolygon[i]!, itemBands[i]!, queryLng, queryLat)) {
        return;
      }
    }
    entrySeen[e] = lookup;
    found.push(entryIds[e]!);
  }

  const fromTree = (t: number): boolean => {
    const i = treeIndex[t]!;
    consider(itemEntry[i]!, i, undefined);
    return false;
  };

  function scanGrid(g: Grid, x: number, y: number): void {
    const cx = Math.floor(x / g.cell) | 0, cy = Math.floor(y / g.cell) | 0;
    for (let slot = hashCell(cx, cy) & g.mask; g.count[slot] !== 0; slot = (slot + 1) & g.mask) {
      if (g.cellX[slot] !== cx || g.cellY[slot] !== cy) continue;
      const end = g.start[slot]! + g.count[slot]!;
      for (let k = g.start[slot]!; k < end; k++) {
        const i = g.members[k]!;
        const b = i * STRIDE;
        if (x >= packed[b]! && x <= packed[b + 2]! && y >= packed[b + 1]! && y <= packed[b + 3]!) consider(itemEntry[i]!, i, undefined);
      }
      return;
    }
  }

  function scan(x: number, y: number): void {
    if (grid !== undefined) scanGrid(grid, x, y);
    tree?.search(x, y, x, y, fromTree);
    for (const item of pending) {
      const b = item.box;
      if (x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3]) consider(item.entry.no, -1, item.shape);
    }
  }

  function query(lng: number, lat: number, test: boolean, filter: ((id: string) => boolean) | undefined): string[] {
    // Rebuilding here rather than on change: loading thousands of geofences costs one rebuild.
    if (pending.length > PENDING_LIMIT || (dead > PENDING_LIMIT && dead * 4 > treeItems.length)) rebuild();
    lookup++;
    queryLng = lng;
    queryLat = lat;
    exact = test;
    accept = filter;
    const out: string[] = [];
    found = out;
    scan(lng, lat);
    // Longitudes ±180 are one meridian: a point there also looks up its twin on the other side.
    if (lng >= 180 - BOUNDARY_EPS_DEG) scan(lng - 360, lat);
    else if (lng <= -180 + BOUNDARY_EPS_DEG) scan(lng + 360, lat);
    found = [];
    accept = undefined;
    return out;
  }

  return {
    set(id, geometry) {
      const previous = entries.get(id);
      if (previous !== undefined) retire(previous);
      const compiled = 'compact' in geometry ? geometry : compactGeometry(geometry);
      const entry: Entry = { id, compiled, live: true, no: 0 };
      number(entry);
      entries.set(id, entry);
      for (const shape of entry.compiled.shapes) for (const box of shape.boxes) pending.push({ entry, shape, box });
    },
    remove(id) {
      const entry = entries.get(id);
      if (entry === undefined) return false;
      entries.delete(id);
      retire(entry);
      return true;
    },
    has: (id) => entries.has(id),
    get size() {
      return entries.size;
    },
    candidates: (lng, lat) => query(lng, lat, false, undefined),
    containing: (lng, lat, filter) => query(lng, lat, true, filter),
  };
}
