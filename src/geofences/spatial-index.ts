// Which geofences hold a point: a box index narrows the geofences to those whose box holds it, and
// only those get the exact test (geometry.ts).
//
// The box index is flatbush, a static packed R-tree in typed arrays, rather than rbush (dynamic
// inserts and removals): a lookup happens for every located telemetry record, a geofence change
// is rare, and flatbush's lookups are faster (no node objects to chase) in a fraction of rbush's
// memory. Being static, it is rebuilt on change, but not on every change: new boxes wait in a
// short list that lookups scan directly, and removed ones are skipped by a flag, until either
// grows enough to pay for a rebuild (O(n log n), a few milliseconds for 10,000 geofences), which
// the next lookup then does. So loading thousands of geofences costs one rebuild, and creations
// between lookups one per PENDING_LIMIT of them, never one each.
import Flatbush from 'flatbush';
import {
  BOUNDARY_EPS_DEG, compileGeometry, shapeContains, type BBox, type CompiledGeometry, type Shape,
} from './geometry.ts';
import type { GeofenceGeometry } from './schema.ts';

/** New boxes scanned linearly before a rebuild folds them into the tree. */
const PENDING_LIMIT = 64;

interface Entry {
  id: string;
  geometry: GeofenceGeometry;
  compiled: CompiledGeometry;
  /** False once removed or replaced: its boxes still in the tree are skipped. */
  live: boolean;
  /** The lookup that last reported it, so a geofence with several boxes is reported once. */
  seen: number;
}

/** One box of one shape of one geofence. */
interface Item {
  entry: Entry;
  shape: Shape;
  box: BBox;
}

export interface GeofenceIndex {
  /** Adds a geofence, or replaces the geometry of one with the same id. The geometry must be valid. */
  set(id: string, geometry: GeofenceGeometry): void;
  /** Removes a geofence; false if there was none with that id. */
  remove(id: string): boolean;
  has(id: string): boolean;
  get(id: string): GeofenceGeometry | undefined;
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
  let treeItems: Item[] = [];
  let pending: Item[] = [];
  /** Items in the tree whose entry is no longer live. */
  let dead = 0;
  let lookup = 0;

  function rebuild(): void {
    const items: Item[] = [];
    for (const item of treeItems) if (item.entry.live) items.push(item);
    for (const item of pending) if (item.entry.live) items.push(item);
    pending = [];
    dead = 0;
    treeItems = items;
    if (items.length === 0) {
      tree = undefined;
      return;
    }
    const built = new Flatbush(items.length);
    for (const { box } of items) built.add(box[0], box[1], box[2], box[3]);
    built.finish();
    tree = built;
  }

  function retire(entry: Entry): void {
    entry.live = false;
    dead += entry.compiled.shapes.reduce((sum, shape) => sum + shape.boxes.length, 0);
  }

  // The lookup in progress. A lookup allocates nothing but its answer: the tree calls one callback
  // made once, which reads the query from here (a closure per lookup cost as much as the tree).
  let queryLng = 0;
  let queryLat = 0;
  let exact = true;
  let accept: ((id: string) => boolean) | undefined;
  let found: string[] = [];

  function visit(item: Item): void {
    const entry = item.entry;
    if (!entry.live || entry.seen === lookup) return;
    if (accept !== undefined && !accept(entry.id)) {
      entry.seen = lookup;
      return;
    }
    // Only a hit marks the entry: another part of the same MultiPolygon may still hold the point.
    if (exact && !shapeContains(item.shape, queryLng, queryLat)) return;
    entry.seen = lookup;
    found.push(entry.id);
  }

  const fromTree = (i: number): boolean => {
    visit(treeItems[i]!);
    return false;
  };

  function scan(x: number, y: number): void {
    tree?.search(x, y, x, y, fromTree);
    for (const item of pending) {
      const b = item.box;
      if (x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3]) visit(item);
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
      const entry: Entry = { id, geometry, compiled: compileGeometry(geometry), live: true, seen: 0 };
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
    get: (id) => entries.get(id)?.geometry,
    get size() {
      return entries.size;
    },
    candidates: (lng, lat) => query(lng, lat, false, undefined),
    containing: (lng, lat, filter) => query(lng, lat, true, filter),
  };
}
