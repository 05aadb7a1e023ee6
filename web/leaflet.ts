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

/**
 * Removes a map, also in the middle of a zoom animation: Leaflet ends one on a timer that
 * `remove()` leaves running, and that then reads the panes `remove()` took away (a page left
 * while its map still zoomed threw "Cannot read properties of undefined (reading
 * '_leaflet_pos')"). The animation is marked over first, as its own end would.
 */
export function removeMap(map: L.Map): void {
  (map as unknown as { _animatingZoom: boolean })._animatingZoom = false;
  map.remove();
}

/** OpenStreetMap's attribution, shown while map tiles are on screen. */
export const OSM_ATTRIBUTION = '© <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors';

const GRID_STEPS = [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45];
/** The grid's tiles, square. */
const GRID_TILE = 256;
/** Web Mercator's edge: the map has nothing north or south of it. */
const MAX_LAT = 85.0511287798;
/** The gap between a label and the map's edge, a control or another label, in px. */
const LABEL_GAP = 4;

/** The degrees between lines at a zoom: lines about every 100 px. */
function gridStep(zoom: number): number {
  const wanted = (360 / 2 ** zoom) * (100 / GRID_TILE);
  return GRID_STEPS.find((s) => s >= wanted) ?? 45;
}

function gridLabel(value: number, step: number, positive: string, negative: string): string {
  const digits = Math.max(0, Math.ceil(-Math.log10(step)));
  const text = Math.abs(value).toFixed(digits);
  return `${text}°${Number(text) === 0 ? '' : value > 0 ? positive : negative}`;
}

/** A longitude east or west of a world copy, as on the world itself: -180 to 180. */
function wrapLng(lng: number): number {
  return ((((lng + 180) % 360) + 360) % 360) - 180;
}

/**
 * The coordinate grid's lines (latitude and longitude), drawn tile by tile on canvases: the
 * map's background where there are no map tiles (none configured, or none reachable). Their
 * labels are GridLabels', along the map's edges.
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
    const step = gridStep(coords.z);
    ctx.strokeStyle = 'rgba(40, 60, 80, 0.25)';
    ctx.lineWidth = 1;
    for (let lng = Math.ceil(topLeft.lng / step) * step; lng < bottomRight.lng; lng += step) {
      const x = Math.round(map.project([0, lng], coords.z).x - origin.x) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, 0);
      ctx.lineTo(x, size.y);
      ctx.stroke();
    }
    for (let lat = Math.ceil(bottomRight.lat / step) * step; lat < topLeft.lat; lat += step) {
      const y = Math.round(map.project([lat, 0], coords.z).y - origin.y) + 0.5;
      ctx.beginPath();
      ctx.moveTo(0, y);
      ctx.lineTo(size.x, y);
      ctx.stroke();
    }
    return tile;
  },
});

interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

function overlaps(a: Box, b: Box): boolean {
  return a.left < b.right + LABEL_GAP && b.left < a.right + LABEL_GAP && a.top < b.bottom + LABEL_GAP && b.top < a.bottom + LABEL_GAP;
}

interface GridLabelsLayer extends L.Layer {
  _box: HTMLElement;
  /** The label of each line on screen, by its kind and number of steps from 0°. */
  _labels: Map<string, HTMLElement>;
  _frame: number;
  _update(): void;
}

/**
 * The grid's labels, read like a chart's axes: each latitude line's once along the map's left
 * edge, each longitude line's once along its bottom edge, whole, clear of the map's controls, and
 * placed again whenever the view moves. One element in the tile pane, just above the grid and
 * below map tiles (which hide the grid's lines, so its labels too); the pane moves with the map,
 * so the element is put back at the container's corner each time. Leaflet hides it during a zoom
 * animation (leaflet-zoom-hide) and the zoom's end places it again.
 */
export const GridLabels = L.Layer.extend({
  options: { pane: 'tilePane' },

  onAdd(this: GridLabelsLayer) {
    this._box = L.DomUtil.create('div', 'grid-labels leaflet-zoom-hide');
    this._box.setAttribute('aria-hidden', 'true');
    this._labels = new Map();
    this.getPane()?.append(this._box);
    this._update();
    // Controls added after the layer (a drawing toolbar) are known by the next frame.
    this._frame = requestAnimationFrame(() => this._update());
    return this;
  },

  onRemove(this: GridLabelsLayer) {
    cancelAnimationFrame(this._frame);
    this._box.remove();
    this._labels.clear();
    return this;
  },

  getEvents(this: GridLabelsLayer) {
    // Leaflet keeps this object to take the same handlers off when the layer goes.
    const update = () => this._update();
    return { viewreset: update, move: update, resize: update };
  },

  _update(this: GridLabelsLayer) {
    const map = (this as unknown as { _map: L.Map | undefined })._map;
    if (map === undefined) return;
    const container = map.getContainer();
    const { x: width, y: height } = map.getSize();
    L.DomUtil.setPosition(this._box, map.containerPointToLayerPoint([0, 0]));
    const step = gridStep(Math.round(map.getZoom()));
    const view = map.getBounds();
    const center = map.getCenter();
    const lines: Array<{ key: string; text: string; lat: boolean; at: number }> = [];
    for (let i = Math.ceil(Math.max(view.getSouth(), -MAX_LAT) / step); i * step <= Math.min(view.getNorth(), MAX_LAT); i++) {
      lines.push({ key: `lat ${i}`, text: gridLabel(i * step, step, 'N', 'S'), lat: true, at: map.latLngToContainerPoint([i * step, center.lng]).y });
    }
    // The view may show more than one world: each copy's lines are labelled as the world's.
    for (let i = Math.ceil(view.getWest() / step); i * step <= view.getEast(); i++) {
      lines.push({ key: `lng ${i}`, text: gridLabel(wrapLng(i * step), step, 'E', 'W'), lat: false, at: map.latLngToContainerPoint([center.lat, i * step]).x });
    }

    // Writes first, then every read, then the positions: one layout per update.
    const wanted = new Set(lines.map((line) => line.key));
    for (const [key, el] of this._labels) {
      if (!wanted.has(key)) {
        el.remove();
        this._labels.delete(key);
      }
    }
    const elements = lines.map((line) => {
      let el = this._labels.get(line.key);
      if (el === undefined) {
        el = L.DomUtil.create('span', `grid-label ${line.lat ? 'grid-label-lat' : 'grid-label-lng'}`, this._box);
        this._labels.set(line.key, el);
      }
      if (el.textContent !== line.text) el.textContent = line.text;
      el.hidden = false;
      return el;
    });
    const corner = container.getBoundingClientRect();
    const controls: Box[] = [];
    for (const control of container.querySelectorAll('.leaflet-control')) {
      const r = control.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      const left = r.left - corner.left - container.clientLeft;
      const top = r.top - corner.top - container.clientTop;
      controls.push({ left, top, right: left + r.width, bottom: top + r.height });
    }
    const sizes = elements.map((el) => ({ w: el.offsetWidth, h: el.offsetHeight }));

    const placed: Box[] = [];
    // The longitude labels' row along the bottom edge, which latitude labels stay above.
    const row = Math.max(0, ...sizes.filter((_, i) => !lines[i]!.lat).map((s) => s.h));
    const bottom = height - LABEL_GAP;
    lines.forEach((line, i) => {
      const el = elements[i]!;
      const { w, h } = sizes[i]!;
      let box: Box | undefined;
      if (line.lat) {
        const top = Math.round(line.at - h / 2);
        box = { left: LABEL_GAP, top, right: LABEL_GAP + w, bottom: top + h };
        // Beside a control on the edge (the zoom buttons), not beneath it.
        for (const control of [...controls].sort((a, b) => a.left - b.left)) {
          if (overlaps(box, control)) box = { ...box, left: control.right + LABEL_GAP, right: control.right + LABEL_GAP + w };
        }
        if (top < LABEL_GAP || box.bottom > bottom - row - LABEL_GAP) box = undefined;
      } else {
        const left = Math.round(line.at - w / 2);
        box = { left, top: bottom - h, right: left + w, bottom };
        // Above a control on the edge (the attribution), not beneath it.
        for (const control of [...controls].sort((a, b) => b.bottom - a.bottom)) {
          if (overlaps(box, control)) box = { ...box, top: control.top - LABEL_GAP - h, bottom: control.top - LABEL_GAP };
        }
        if (left < LABEL_GAP || box.right > width - LABEL_GAP || box.top < LABEL_GAP) box = undefined;
      }
      // A label that does not fit whole, or would cover another, is left out: its line is at the edge.
      if (box === undefined || box.right > width - LABEL_GAP || placed.some((other) => overlaps(box, other)) || controls.some((c) => overlaps(box, c))) {
        el.hidden = true;
        return;
      }
      placed.push(box);
      el.style.left = `${box.left}px`;
      el.style.top = `${box.top}px`;
    });
  },
});

/**
 * The base layer every dashboard map uses: map tiles from `tileUrl` with OpenStreetMap's
 * attribution once a tile has shown, over the coordinate grid and its labels. The grid stays
 * beneath, so where tiles fail (no internet) the map still reads. `onNote` hears a sentence about what is shown.
 */
export function addBaseLayers(map: L.Map, tileUrl: string, onNote: (text: string) => void): void {
  new (GridLayer as unknown as new (options: L.GridLayerOptions) => L.GridLayer)({ zIndex: 0 }).addTo(map);
  new (GridLabels as unknown as new () => L.Layer)().addTo(map);
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
