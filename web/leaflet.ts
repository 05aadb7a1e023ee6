// Leaflet for every map of the dashboard, with the Leaflet-Geoman drawing tools. Leaflet-Geoman
// extends the global `L`, so Leaflet is put there first; ES modules run their imports in order.
import L from 'leaflet';

(globalThis as { L?: typeof L }).L = L;

export default L;

/**
 * A tooltip's or popup's content as text: Leaflet puts a string given to bindTooltip or
 * bindPopup in as HTML, and names (geofences, vehicles, rules) are whatever their owners typed.
 */
export function asText(text: string): HTMLElement {
  const span = document.createElement('span');
  span.textContent = text;
  return span;
}

/** OpenStreetMap's attribution, shown while map tiles are on screen. */
export const OSM_ATTRIBUTION = '© <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors';

const GRID_STEPS = [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45];

function gridLabel(value: number, step: number, positive: string, negative: string): string {
  const digits = Math.max(0, Math.ceil(-Math.log10(step)));
  return `${Math.abs(value).toFixed(digits)}°${value === 0 ? '' : value > 0 ? positive : negative}`;
}

/**
 * A coordinate grid (latitude and longitude lines, labelled), drawn tile by tile on canvases:
 * the map's background where there are no map tiles (none configured, or none reachable).
 */
export const GridLayer = L.GridLayer.extend({
  createTile(this: L.GridLayer, coords: L.Coords): HTMLCanvasElement {
    const size = this.getTileSize();
    const tile = document.createElement('canvas');
    const ratio = window.devicePixelRatio || 1;
    tile.width = size.x * ratio;
    tile.height = size.y * ratio;
    const ctx = tile.getContext('2d');
    if (ctx === null) return tile;
    ctx.scale(ratio, ratio);
    ctx.fillStyle = '#eef2f5';
    ctx.fillRect(0, 0, size.x, size.y);
    const map = (this as unknown as { _map: L.Map })._map;
    const origin = L.point(coords.x * size.x, coords.y * size.y);
    const topLeft = map.unproject(origin, coords.z);
    const bottomRight = map.unproject(origin.add(size), coords.z);
    // Lines about every 100 px.
    const wanted = (360 / 2 ** coords.z) * (100 / size.x);
    const step = GRID_STEPS.find((s) => s >= wanted) ?? 45;
    ctx.strokeStyle = 'rgba(40, 60, 80, 0.25)';
    ctx.fillStyle = 'rgba(20, 30, 40, 0.75)';
    ctx.lineWidth = 1;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (let lng = Math.ceil(topLeft.lng / step) * step; lng < bottomRight.lng; lng += step) {
      const x = Math.round(map.project([0, lng], coords.z).x - origin.x) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, 0);
      ctx.lineTo(x, size.y);
      ctx.stroke();
      ctx.fillText(gridLabel(lng, step, 'E', 'W'), x + 3, 3);
    }
    for (let lat = Math.ceil(bottomRight.lat / step) * step; lat < topLeft.lat; lat += step) {
      const y = Math.round(map.project([lat, 0], coords.z).y - origin.y) + 0.5;
      ctx.beginPath();
      ctx.moveTo(0, y);
      ctx.lineTo(size.x, y);
      ctx.stroke();
      ctx.fillText(gridLabel(lat, step, 'N', 'S'), 3, y + 2);
    }
    return tile;
  },
});

/**
 * The base layer every dashboard map uses: map tiles from `tileUrl` with OpenStreetMap's
 * attribution once a tile has shown, over the coordinate grid. The grid stays beneath, so where
 * tiles fail (no internet) the map still reads. `onNote` hears a sentence about what is shown.
 */
export function addBaseLayers(map: L.Map, tileUrl: string, onNote: (text: string) => void): void {
  new (GridLayer as unknown as new (options: L.GridLayerOptions) => L.GridLayer)({ zIndex: 0 }).addTo(map);
  if (tileUrl === '') {
    onNote('Coordinate grid (no map tiles configured).');
    return;
  }
  let loaded = 0;
  let failed = 0;
  const tiles = L.tileLayer(tileUrl, { maxZoom: 19, zIndex: 1, referrerPolicy: 'no-referrer' });
  tiles.on('tileload', () => {
    if (loaded++ === 0) {
      map.attributionControl.addAttribution(OSM_ATTRIBUTION);
      onNote('');
    }
  });
  tiles.on('tileerror', () => {
    if (failed++ === 0 && loaded === 0) onNote('Map tiles could not be loaded; showing the coordinate grid.');
  });
  tiles.addTo(map);
}
