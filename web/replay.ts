// Route replay for one vehicle: pick a period, and the page draws the track from the history
// (its pages, time order), lists and draws the trips and stops the service finds in it, and plays
// the vehicle along the track at 1× to 20× with a time slider. The period's telemetry can be
// downloaded as CSV, GPX or GeoJSON: the export needs the bearer token, so it is fetched here and
// saved as a Blob, never opened as a URL that would need the key in it.
import { api, download, encode, explain, type History, type Stop, type Trip } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import L, { addBaseLayers, asText, removeMap } from './leaflet.ts';

export type { Stop, Trip };

interface Point {
  at: number;
  lat: number;
  lng: number;
  speed: number | undefined;
  heading: number | undefined;
}

const SPEEDS = [1, 2, 5, 10, 20];
/** Points drawn at most: 20 pages of the history's largest page. */
const MAX_PAGES = 20;
const FORMATS = [
  { format: 'csv', label: 'CSV' },
  { format: 'gpx', label: 'GPX' },
  { format: 'geojson', label: 'GeoJSON' },
] as const;

/** `<input type="datetime-local">` wants local time without a zone. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

function duration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function problemBox(error: unknown): HTMLElement {
  const { title, detail } = explain(error);
  return h('div', { class: 'problem', role: 'alert' }, h('strong', {}, title), detail === '' ? null : h('p', {}, detail));
}

/** The first index whose time is after `at` (binary search). */
function after(points: readonly Point[], at: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid]!.at <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Where the vehicle was at `at`: between the two records around it, in proportion to time. */
function positionAt(points: readonly Point[], at: number): { lat: number; lng: number; heading: number | undefined; speed: number | undefined } {
  const i = after(points, at);
  const a = points[Math.max(0, i - 1)]!;
  const b = points[Math.min(points.length - 1, i)]!;
  const f = b.at === a.at ? 0 : Math.min(1, Math.max(0, (at - a.at) / (b.at - a.at)));
  let heading = a.heading;
  if (heading === undefined && (a.lat !== b.lat || a.lng !== b.lng)) {
    const y = Math.sin(((b.lng - a.lng) * Math.PI) / 180) * Math.cos((b.lat * Math.PI) / 180);
    const x = Math.cos((a.lat * Math.PI) / 180) * Math.sin((b.lat * Math.PI) / 180) -
      Math.sin((a.lat * Math.PI) / 180) * Math.cos((b.lat * Math.PI) / 180) * Math.cos(((b.lng - a.lng) * Math.PI) / 180);
    heading = ((Math.atan2(y, x) * 180) / Math.PI + 360) % 360;
  }
  return { lat: a.lat + (b.lat - a.lat) * f, lng: a.lng + (b.lng - a.lng) * f, heading, speed: a.speed };
}

/** The export, fetched with the key or the session cookie and handed to the browser as a file. */
function exportFile(vehicleId: string, format: string, from: string, to: string, signal: AbortSignal): Promise<string> {
  return download(`/v2/telemetry/${encode(vehicleId)}/export`, { from, to, format }, `${vehicleId}.${format}`, signal);
}

export function renderReplay(root: HTMLElement, vehicleId: string, ctx: { tileUrl: string }): () => void {
  const controller = new AbortController();
  const now = Date.now();
  const fromInput = h('input', { id: 'replay-from', type: 'datetime-local', required: true, value: localInput(now - 24 * 3_600_000) });
  const toInput = h('input', { id: 'replay-to', type: 'datetime-local', required: true, value: localInput(now + 60_000) });
  const loadButton = h('button', { type: 'submit', class: 'primary' }, 'Show route');
  const form = h('form', { class: 'replay-form' },
    h('label', {}, 'From ', fromInput), h('label', {}, 'To ', toInput), loadButton);
  const status = h('div', { class: 'replay-status', 'aria-live': 'polite' });
  const playButton = h('button', { type: 'button', id: 'replay-play', disabled: true }, 'Play');
  const speedSelect = h('select', { id: 'replay-speed', 'aria-label': 'Playback speed' }, ...SPEEDS.map((s) => h('option', { value: s }, `${s}×`)));
  speedSelect.value = '10';
  const slider = h('input', { id: 'replay-time', type: 'range', min: 0, max: 0, step: 1, value: 0, disabled: true, 'aria-label': 'Replay time' });
  const clock = h('output', { id: 'replay-clock', for: 'replay-time', class: 'replay-clock' }, '—');
  const exportBox = h('div', { class: 'replay-export', role: 'group', 'aria-label': 'Download the period' },
    h('span', { class: 'muted' }, 'Download: '),
    ...FORMATS.map(({ format, label }) => {
      const button = h('button', { type: 'button', 'data-format': format }, label);
      button.addEventListener('click', () => void exportAs(format, button));
      return button;
    }));
  const exportStatus = h('div', { class: 'replay-export-status', 'aria-live': 'polite' });
  const mapBox = h('div', { class: 'replay-map' });
  const tripsBox = h('div', { class: 'replay-trips' });
  const stopsBox = h('div', { class: 'replay-stops' });
  const note = h('p', { class: 'map-note', role: 'status' });

  replace(root,
    h('div', { class: 'chart-head' }, h('h2', {}, 'Route replay'), form),
    status,
    h('div', { class: 'replay-layout' },
      h('div', { class: 'replay-main' },
        h('div', { class: 'map' }, mapBox, note),
        h('div', { class: 'replay-controls' }, playButton, speedSelect, slider, clock),
        exportBox, exportStatus),
      h('div', { class: 'replay-side' }, h('h3', {}, 'Trips'), tripsBox, h('h3', {}, 'Stops'), stopsBox)));

  const map = L.map(mapBox, { zoomControl: true, minZoom: 1, maxZoom: 19 });
  map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
  map.setView([20, 0], 2);
  addBaseLayers(map, ctx.tileUrl, (text) => {
    note.textContent = text;
  });
  /** What the view was last fitted to: kept in view when the layout changes the map's size. */
  let fitted: L.LatLngBounds | undefined;
  const fit = (bounds: L.LatLngBounds) => {
    fitted = bounds;
    map.fitBounds(bounds, { padding: [30, 30], maxZoom: 17 });
  };
  map.on('dragstart', () => {
    fitted = undefined;
  });
  const resize = new ResizeObserver(() => {
    map.invalidateSize({ pan: false });
    if (fitted !== undefined) map.fitBounds(fitted, { padding: [30, 30], maxZoom: 17 });
  });
  resize.observe(mapBox);
  const overlay = L.layerGroup().addTo(map);
  const arrow = h('span', { class: 'marker-arrow', 'aria-hidden': 'true' });
  const cursorEl = h('span', { class: 'marker has-heading replay-cursor', 'data-status': 'active' }, arrow);
  const cursor = L.marker([0, 0], { icon: L.divIcon({ html: cursorEl, className: 'vehicle-icon', iconSize: [18, 18], iconAnchor: [9, 9] }), interactive: false });

  let points: Point[] = [];
  let range = { from: '', to: '' };
  let playing = false;
  let frame = 0;
  let lastFrame = 0;
  let loadToken = 0;

  function show(at: number) {
    if (points.length === 0) return;
    const p = positionAt(points, at);
    cursor.setLatLng([p.lat, p.lng]);
    arrow.style.transform = p.heading === undefined ? '' : `rotate(${p.heading}deg)`;
    const offset = Math.round((at - points[0]!.at) / 1000);
    slider.value = String(offset);
    slider.setAttribute('aria-valuetext', formatTime(new Date(at).toISOString()));
    clock.textContent = `${formatTime(new Date(at).toISOString())}${p.speed === undefined ? '' : ` · ${p.speed.toFixed(0)} km/h`}`;
    cursorEl.dataset.lat = String(p.lat);
    cursorEl.dataset.lng = String(p.lng);
  }

  const current = () => points[0]!.at + Number(slider.value) * 1000;

  function tick(time: number) {
    if (!playing) return;
    const elapsed = lastFrame === 0 ? 0 : time - lastFrame;
    lastFrame = time;
    const at = Math.min(points.at(-1)!.at, (playAt += elapsed * Number(speedSelect.value)));
    show(at);
    if (at >= points.at(-1)!.at) {
      pause();
      return;
    }
    frame = requestAnimationFrame(tick);
  }
  let playAt = 0;

  function play() {
    if (points.length < 2) return;
    if (current() >= points.at(-1)!.at) show(points[0]!.at);
    playAt = current();
    playing = true;
    lastFrame = 0;
    playButton.textContent = 'Pause';
    playButton.setAttribute('aria-pressed', 'true');
    frame = requestAnimationFrame(tick);
  }

  function pause() {
    playing = false;
    cancelAnimationFrame(frame);
    playButton.textContent = 'Play';
    playButton.setAttribute('aria-pressed', 'false');
  }

  playButton.addEventListener('click', () => (playing ? pause() : play()));
  slider.addEventListener('input', () => {
    if (points.length === 0) return;
    playAt = current();
    show(playAt);
  });

  function jumpTo(startedAt: string, bounds: L.LatLngBounds | undefined) {
    pause();
    show(Math.max(points[0]?.at ?? 0, Date.parse(startedAt)));
    if (bounds !== undefined && bounds.isValid()) fit(bounds);
  }

  function segment(startedAt: string, endedAt: string): L.LatLngExpression[] {
    const from = Date.parse(startedAt);
    const to = Date.parse(endedAt);
    return points.filter((p) => p.at >= from && p.at <= to).map((p) => [p.lat, p.lng] as [number, number]);
  }

  function showTrips(trips: readonly Trip[]) {
    if (trips.length === 0) {
      replace(tripsBox, h('p', { class: 'muted' }, 'No trips in this period.'));
      return;
    }
    const rows = trips.map((trip, i) => {
      const line = L.polyline(segment(trip.startedAt, trip.endedAt), { color: '#bc4c00', weight: 5, opacity: 0.8 }).addTo(overlay);
      line.bindTooltip(asText(`Trip ${i + 1}`));
      const button = h('button', { type: 'button', class: 'link' }, `Trip ${i + 1}`);
      button.addEventListener('click', () => jumpTo(trip.startedAt, line.getBounds()));
      return h('tr', { 'data-trip': i + 1 },
        h('th', { scope: 'row' }, button),
        h('td', {}, formatTime(trip.startedAt)),
        h('td', { class: 'num' }, duration(trip.durationSeconds)),
        h('td', { class: 'num' }, `${(trip.distanceMeters / 1000).toFixed(2)} km`),
        h('td', { class: 'num' }, trip.maxSpeed === null ? '—' : `${trip.maxSpeed.toFixed(0)} km/h`));
    });
    replace(tripsBox, h('table', { class: 'trips', 'aria-label': 'Trips' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Trip'), h('th', { scope: 'col' }, 'Start'), h('th', { scope: 'col', class: 'num' }, 'Duration'),
        h('th', { scope: 'col', class: 'num' }, 'Distance'), h('th', { scope: 'col', class: 'num' }, 'Max speed'))),
      h('tbody', {}, ...rows)));
  }

  function showStops(stops: readonly Stop[]) {
    if (stops.length === 0) {
      replace(stopsBox, h('p', { class: 'muted' }, 'No stops in this period.'));
      return;
    }
    const rows = stops.map((stop, i) => {
      let bounds: L.LatLngBounds | undefined;
      if (stop.location !== null) {
        const dot = L.circleMarker([stop.location.lat, stop.location.lng], { radius: 8, color: '#cf222e', fillOpacity: 0.6 }).addTo(overlay);
        dot.bindTooltip(asText(`Stop ${i + 1}: ${duration(stop.durationSeconds)}`));
        bounds = L.latLngBounds([dot.getLatLng()]);
      }
      const button = h('button', { type: 'button', class: 'link' }, `Stop ${i + 1}`);
      button.addEventListener('click', () => jumpTo(stop.startedAt, bounds));
      return h('tr', { 'data-stop': i + 1 },
        h('th', { scope: 'row' }, button),
        h('td', {}, formatTime(stop.startedAt)),
        h('td', { class: 'num' }, duration(stop.durationSeconds)));
    });
    replace(stopsBox, h('table', { class: 'stops', 'aria-label': 'Stops' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Stop'), h('th', { scope: 'col' }, 'Start'), h('th', { scope: 'col', class: 'num' }, 'Duration'))),
      h('tbody', {}, ...rows)));
  }

  async function load() {
    const token = ++loadToken;
    const signal = controller.signal;
    pause();
    const fromMs = Date.parse(fromInput.value);
    const toMs = Date.parse(toInput.value);
    if (!Number.isFinite(fromMs) || !Number.isFinite(toMs) || fromMs >= toMs) {
      replace(status, h('div', { class: 'problem', role: 'alert' }, h('strong', {}, 'Check the period'), h('p', {}, '"From" must be before "To".')));
      return;
    }
    range = { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() };
    replace(status, h('p', { class: 'loading', role: 'status' }, 'Loading the route…'));
    replace(tripsBox);
    replace(stopsBox);
    overlay.clearLayers();
    cursor.remove();
    slider.disabled = true;
    playButton.disabled = true;
    try {
      const collected: Point[] = [];
      let cursorToken: string | undefined;
      let capped = false;
      for (let page = 0; ; page++) {
        if (page === MAX_PAGES) {
          capped = true;
          break;
        }
        const result: History = await api<History>('GET', `/v2/telemetry/${encode(vehicleId)}/history`, {
          query: { from: range.from, to: range.to, fields: 'location,speed,heading', limit: 10_000, cursor: cursorToken },
          signal,
        });
        for (const record of result.records) {
          const location = record.data.location;
          if (location === undefined) continue;
          collected.push({ at: Date.parse(record.timestamp), lat: location.lat, lng: location.lng, speed: record.data.speed, heading: record.data.heading });
        }
        if (result.nextCursor === null) break;
        cursorToken = result.nextCursor;
      }
      const query = { from: range.from, to: range.to };
      const [trips, stops] = await Promise.all([
        api<{ trips: Trip[] }>('GET', `/v2/fleet/vehicles/${encode(vehicleId)}/trips`, { query, signal }),
        api<{ stops: Stop[] }>('GET', `/v2/fleet/vehicles/${encode(vehicleId)}/stops`, { query, signal }),
      ]);
      if (token !== loadToken) return;
      points = collected;
      if (points.length === 0) {
        replace(status, h('p', { class: 'muted' }, 'No positions in this period.'));
      } else {
        const track = L.polyline(points.map((p) => [p.lat, p.lng] as [number, number]), { color: '#1f6feb', weight: 3 }).addTo(overlay);
        fit(track.getBounds());
        slider.max = String(Math.round((points.at(-1)!.at - points[0]!.at) / 1000));
        slider.disabled = false;
        playButton.disabled = points.length < 2;
        cursor.addTo(map);
        show(points[0]!.at);
        replace(status, h('p', { class: 'muted', id: 'replay-summary' },
          `${points.length} positions from ${formatTime(new Date(points[0]!.at).toISOString())} to ${formatTime(new Date(points.at(-1)!.at).toISOString())}` +
          `${capped ? ` (the first ${points.length}; choose a shorter period for the rest)` : ''}; ${trips.trips.length} trips, ${stops.stops.length} stops.`));
      }
      showTrips(trips.trips);
      showStops(stops.stops);
    } catch (error) {
      if (signal.aborted || token !== loadToken) return;
      replace(status, problemBox(error));
    }
  }

  async function exportAs(format: string, button: HTMLButtonElement) {
    if (range.from === '') return;
    button.disabled = true;
    replace(exportStatus, h('p', { class: 'loading', role: 'status' }, `Preparing the ${format.toUpperCase()} file…`));
    try {
      const name = await exportFile(vehicleId, format, range.from, range.to, controller.signal);
      replace(exportStatus, h('p', { class: 'ok', role: 'status' }, `Downloaded ${name}.`));
    } catch (error) {
      if (controller.signal.aborted) return;
      replace(exportStatus, problemBox(error));
    } finally {
      button.disabled = false;
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void load();
  });
  void load();

  return () => {
    controller.abort();
    pause();
    resize.disconnect();
    removeMap(map);
  };
}
