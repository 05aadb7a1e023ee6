// The form in which the rule engine keeps a geofence between lookups: typed arrays only. A polygon
// part is its prepared rings packed into one Float64Array of its own (packPolygon), a circle its
// four numbers; the GeoJSON arrays it was made from, and the per-ring objects of the preparation,
// are not kept. An array per position in GeoJSON costs about 70 bytes; here a position costs its
// two coordinates and its entries in the latitude bands (docs/ARCHITECTURE.md "Geofences").
import {
  circleHolds, compileGeometry, packPolygon, packedPolygonContains, packedPolygonSize, type BBox,
} from './geometry.ts';
import type { GeofenceGeometry } from './schema.ts';

export interface CompactCircle {
  kind: 'circle';
  lng: number;
  latRad: number;
  cosLat: number;
  maxHav: number;
  boxes: BBox[];
}

export interface CompactPolygon {
  kind: 'polygon';
  /** The polygon packed at 0 (see packPolygon). */
  data: Float64Array;
  boxes: BBox[];
}

export type CompactShape = CompactCircle | CompactPolygon;

/** A geometry ready for the index: one shape per polygon part, or one circle. */
export interface CompactGeometry {
  compact: true;
  shapes: CompactShape[];
}

/** Prepares a geometry that validateGeometry accepted, keeping only what containment tests read. */
export function compactGeometry(geometry: GeofenceGeometry): CompactGeometry {
  return {
    compact: true,
    shapes: compileGeometry(geometry).shapes.map((shape): CompactShape => {
      if (shape.kind === 'circle') {
        return { kind: 'circle', lng: shape.lng, latRad: shape.latRad, cosLat: shape.cosLat, maxHav: shape.maxHav, boxes: shape.boxes };
      }
      const data = new Float64Array(packedPolygonSize(shape));
      packPolygon(shape, data, 0);
      return { kind: 'polygon', data, boxes: shape.boxes };
    }),
  };
}

/** Whether one compact shape holds the point (boundary inclusive, as shapeContains). */
export function compactContains(shape: CompactShape, lng: number, lat: number): boolean {
  if (shape.kind === 'circle') return circleHolds(shape.lng, shape.latRad, shape.cosLat, shape.maxHav, lng, lat);
  return packedPolygonContains(shape.data, 0, lng, lat);
}
