// The fleet map's cluster index, off the page's main thread: supercluster's k-d trees over every
// vehicle take tens of milliseconds to build for 10,000 vehicles (20 to 40 ms in Chromium on the
// development machine), which on the main thread held up a frame for 40 to 90 ms about once a
// second while vehicles moved. The page sends the positions (a Float64Array of
// lng, lat pairs, moved rather than copied) whenever they changed enough; it asks for the clusters
// of its view and for the zoom at which a cluster splits.
import type { Feature, Point } from 'geojson';
import Supercluster from 'supercluster';

export type WorkerRequest =
  | { type: 'load'; version: number; coordinates: Float64Array }
  | { type: 'query'; seq: number; version: number; bbox: [number, number, number, number]; zoom: number }
  | { type: 'expand'; clusterId: number; lat: number; lng: number };

export type WorkerReply =
  | { type: 'loaded'; version: number; ms: number }
  /** `clusters`: lng, lat, count, id for each cluster; `points`: the vehicles standing alone, by index. */
  | { type: 'clusters'; seq: number; version: number; clusters: Float64Array; points: Uint32Array }
  | { type: 'expansion'; zoom: number; lat: number; lng: number };

/** Above this zoom every vehicle stands alone. */
export const CLUSTER_MAX_ZOOM = 16;

const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: WorkerReply, transfer?: Transferable[]): void;
};

let index: Supercluster<{ i: number }> | undefined;
let version = -1;

scope.onmessage = (event) => {
  const request = event.data;
  if (request.type === 'load') {
    const started = performance.now();
    const c = request.coordinates;
    const features = new Array<Feature<Point, { i: number }>>(c.length / 2);
    for (let i = 0; i < features.length; i++) {
      features[i] = { type: 'Feature', geometry: { type: 'Point', coordinates: [c[2 * i]!, c[2 * i + 1]!] }, properties: { i } };
    }
    index = new Supercluster<{ i: number }>({ radius: 60, maxZoom: CLUSTER_MAX_ZOOM }).load(features);
    version = request.version;
    scope.postMessage({ type: 'loaded', version, ms: performance.now() - started });
  } else if (request.type === 'query') {
    if (index === undefined) return;
    const items = index.getClusters(request.bbox, request.zoom);
    const clusters: number[] = [];
    const points: number[] = [];
    for (const item of items) {
      const properties = item.properties as { cluster?: boolean; cluster_id?: number; point_count?: number; i?: number };
      if (properties.cluster === true) {
        const [lng, lat] = item.geometry.coordinates as [number, number];
        clusters.push(lng, lat, properties.point_count ?? 0, properties.cluster_id ?? -1);
      } else {
        points.push(properties.i ?? 0);
      }
    }
    const reply: WorkerReply = { type: 'clusters', seq: request.seq, version, clusters: Float64Array.from(clusters), points: Uint32Array.from(points) };
    scope.postMessage(reply, [reply.clusters.buffer, reply.points.buffer]);
  } else if (index !== undefined) {
    let zoom = CLUSTER_MAX_ZOOM + 1;
    try {
      zoom = index.getClusterExpansionZoom(request.clusterId);
    } catch {
      // A cluster of an index since replaced: zoom in all the way.
    }
    scope.postMessage({ type: 'expansion', zoom, lat: request.lat, lng: request.lng });
  }
};
