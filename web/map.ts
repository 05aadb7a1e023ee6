// The fleet map on Leaflet: map tiles (FLEET_MAP_TILE_URL) over a coordinate grid, vehicles as
// arrows turned to their heading with their id beside them, clustered with supercluster, and a
// search that jumps to a vehicle. Each vehicle's marker is a link to its page, with an
// aria-label and data-vehicle-id.
//
// Built for thousands of vehicles moving every second: setVehicle only records the position;
// once per animation frame the markers on screen move. The cluster index lives in a worker
// (cluster-worker.ts), rebuilt there at most every few hundred milliseconds, so its cost never
// holds up a frame; the page asks it for the clusters of the view after each rebuild and each
// move of the map. Only what is on screen has a DOM element, and an attribute is written only
// when it changes.
import type { WorkerReply, WorkerRequest } from './cluster-worker.ts';
import { h } from './dom.ts';
import L, { addBaseLayers, removeMap } from './leaflet.ts';

interface Vehicle {
  id: string;
  /** Its place in the positions sent to the worker. */
  index: number;
  lat: number;
  lng: number;
  status: string;
  heading: number | undefined;
  /** The marker, while the vehicle is on screen outside a cluster. */
  marker?: L.Marker;
  link?: HTMLAnchorElement;
  arrow?: HTMLElement;
}

export interface FleetMap {
  element: HTMLElement;
  setVehicle(id: string, position: { lat: number; lng: number }, status?: string, heading?: number): void;
  setStatus(id: string, status: string): void;
  /** Centres on a vehicle close enough that it stands alone; false if the map does not have it. */
  find(id: string): boolean;
  fit(): void;
  destroy(): void;
}

/** Above the worker's CLUSTER_MAX_ZOOM (16) every vehicle stands alone. */
const FIND_ZOOM = 17;
/** The worker script, a separate entry of the bundle. */
const WORKER_URL = '/dashboard/cluster-worker.js';

function describe(v: Vehicle): string {
  const heading = v.heading === undefined ? '' : `, heading ${Math.round(v.heading)}°`;
  return `${v.id}, ${v.status}, at ${v.lat.toFixed(5)}, ${v.lng.toFixed(5)}${heading}`;
}

/** Sets an attribute only when it changes: an unchanged write still costs the page a style pass. */
function set(el: Element, name: string, value: string) {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

export function createMap(options: { tileUrl: string }): FleetMap {
  const container = h('div', { class: 'map-view' });
  const note = h('p', { class: 'map-note', role: 'status' });
  const searchInput = h('input', {
    id: 'map-search', type: 'search', name: 'vehicle', placeholder: 'Vehicle id', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'Find a vehicle on the map',
  });
  const searchForm = h('form', { class: 'map-search', role: 'search' }, searchInput, h('button', { type: 'submit' }, 'Find'));
  const searchResult = h('span', { class: 'map-search-result', 'aria-live': 'polite' });
  const fitButton = h('button', { type: 'button', class: 'map-fit', title: 'Show every vehicle' }, 'Fit');
  const element = h('div', { class: 'map', role: 'region', 'aria-label': 'Map of the fleet' },
    h('div', { class: 'map-bar' }, searchForm, searchResult, fitButton), container, note);

  const map = L.map(container, { zoomControl: true, worldCopyJump: true, minZoom: 1, maxZoom: 19 });
  map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
  map.setView([20, 0], 2);
  addBaseLayers(map, options.tileUrl, (text) => {
    note.textContent = text;
  });

  const vehicles = new Map<string, Vehicle>();
  const list: Vehicle[] = [];
  const shown = new Set<Vehicle>();
  const clusterMarkers: L.Marker[] = [];
  const worker = new Worker(WORKER_URL, { type: 'module' });
  let indexDirty = false;
  let building = false;
  /** The positions in the worker's index: of `version`, for `indexed` vehicles. */
  let version = 0;
  let indexed = 0;
  let querySeq = 0;
  let moved = new Set<Vehicle>();
  let lastBuild = -Infinity;
  let buildCost = 0;
  let frame = 0;
  /**
   * Set once the map is removed: Leaflet may still fire an event after that (a window resize's
   * moveend comes 200 ms late), which then finds no map to ask.
   */
  let destroyed = false;
  let buildTimer: number | undefined;
  /** Until the person pans or zooms, the view keeps every vehicle in sight. */
  let follow = true;
  let needsFit = false;
  let programmatic = false;
  let found: Vehicle | undefined;
  let focusFound = false;
  /** The view less a margin, as of the last query: a vehicle leaving it refits a following map. */
  let inner: L.LatLngBounds | undefined;

  function moveProgrammatically(action: () => void) {
    programmatic = true;
    try {
      action();
    } finally {
      programmatic = false;
    }
  }

  const stopFollowing = () => {
    if (!programmatic) follow = false;
  };
  map.on('zoomstart', stopFollowing);
  map.on('dragstart', stopFollowing);
  map.on('moveend', () => query());

  const send = (request: WorkerRequest, transfer: Transferable[] = []) => worker.postMessage(request, transfer);

  function markerOf(v: Vehicle): L.Marker {
    if (v.marker !== undefined) return v.marker;
    const arrow = h('span', { class: 'marker-arrow', 'aria-hidden': 'true' });
    const link = h('a', { class: 'marker', href: `#/vehicles/${encodeURIComponent(v.id)}`, 'data-vehicle-id': v.id },
      arrow, h('span', { class: 'marker-label' }, v.id));
    v.link = link;
    v.arrow = arrow;
    paint(v);
    v.marker = L.marker([v.lat, v.lng], {
      icon: L.divIcon({ html: link, className: 'vehicle-icon', iconSize: [18, 18], iconAnchor: [9, 9] }),
      keyboard: false,
      riseOnHover: true,
    });
    return v.marker;
  }

  /** The marker's look: status colour, heading, label, position data. */
  function paint(v: Vehicle) {
    if (v.link === undefined || v.arrow === undefined) return;
    set(v.link, 'data-status', v.status);
    set(v.link, 'data-lat', String(v.lat));
    set(v.link, 'data-lng', String(v.lng));
    v.link.classList.toggle('has-heading', v.heading !== undefined);
    v.link.classList.toggle('found', v === found);
    const turn = v.heading === undefined ? '' : `rotate(${v.heading}deg)`;
    if (v.arrow.style.transform !== turn) v.arrow.style.transform = turn;
    const text = describe(v);
    set(v.link, 'aria-label', text);
    set(v.link, 'title', text);
  }

  function clusterMarker(i: number): L.Marker {
    let marker = clusterMarkers[i];
    if (marker === undefined) {
      const count = h('span', { class: 'cluster-count' });
      const button = h('span', { class: 'cluster', role: 'button', tabindex: '0' }, count);
      marker = L.marker([0, 0], { icon: L.divIcon({ html: button, className: 'cluster-icon', iconSize: [40, 40] }), keyboard: false });
      const m = marker;
      const expand = () => {
        const id = Number(button.dataset.clusterId);
        if (!Number.isFinite(id)) return;
        const at = m.getLatLng();
        send({ type: 'expand', clusterId: id, lat: at.lat, lng: at.lng });
      };
      marker.on('click', expand);
      button.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          expand();
        }
      });
      clusterMarkers[i] = marker;
    }
    return marker;
  }

  /** Sends every position to the worker for a new index. */
  function rebuild() {
    const coordinates = new Float64Array(list.length * 2);
    for (let i = 0; i < list.length; i++) {
      coordinates[2 * i] = list[i]!.lng;
      coordinates[2 * i + 1] = list[i]!.lat;
    }
    indexDirty = false;
    building = true;
    version++;
    indexed = list.length;
    lastBuild = performance.now();
    send({ type: 'load', version, coordinates }, [coordinates.buffer]);
  }

  /** Asks the worker for the clusters and lone vehicles of the view. */
  function query() {
    if (version === 0 || destroyed) return;
    const view = map.getBounds();
    inner = view.pad(-0.05);
    const bounds = view.pad(0.1);
    send({
      type: 'query', seq: ++querySeq, version, zoom: map.getZoom(),
      bbox: [Math.max(-180, bounds.getWest()), Math.max(-85, bounds.getSouth()), Math.min(180, bounds.getEast()), Math.min(85, bounds.getNorth())],
    });
  }

  /** Puts the worker's answer on the map. */
  function render(reply: Extract<WorkerReply, { type: 'clusters' }>) {
    const next = new Set<Vehicle>();
    let clustered = 0;
    const c = reply.clusters;
    const clusters = c.length / 4;
    for (let k = 0; k < clusters; k++) {
      const lng = c[4 * k]!;
      const lat = c[4 * k + 1]!;
      const count = c[4 * k + 2]!;
      const marker = clusterMarker(k);
      const at = marker.getLatLng();
      if (at.lat !== lat || at.lng !== lng) marker.setLatLng([lat, lng]);
      clustered += count;
      const el = (marker.options.icon as L.DivIcon).options.html as HTMLElement;
      set(el, 'data-cluster-id', String(c[4 * k + 3]));
      set(el, 'data-count', String(count));
      set(el, 'class', `cluster ${count >= 1000 ? 'cluster-large' : count >= 100 ? 'cluster-medium' : 'cluster-small'}`);
      set(el, 'aria-label', `${count} vehicles here; zoom in`);
      const text = count >= 10_000 ? `${Math.round(count / 1000)}k` : String(count);
      const label = el.firstChild as HTMLElement;
      if (label.textContent !== text) label.textContent = text;
      if (!map.hasLayer(marker)) marker.addTo(map);
    }
    for (const i of reply.points) {
      const v = list[i];
      if (v === undefined) continue;
      next.add(v);
      const marker = markerOf(v);
      marker.setLatLng([v.lat, v.lng]);
      if (!shown.has(v)) marker.addTo(map);
    }
    for (let i = clusters; i < clusterMarkers.length; i++) clusterMarkers[i]!.remove();
    clusterMarkers.length = Math.min(clusterMarkers.length, clusters + 50);
    for (const v of shown) {
      if (!next.has(v)) {
        v.marker?.remove();
        // Its DOM goes; a vehicle away from the view keeps no element.
        v.marker = undefined;
        v.link = undefined;
        v.arrow = undefined;
      }
    }
    shown.clear();
    for (const v of next) shown.add(v);
    set(element, 'data-clusters', String(clusters));
    set(element, 'data-clustered', String(clustered));
    set(element, 'data-markers', String(shown.size));
    set(element, 'data-vehicles', String(indexed));
    set(element, 'data-zoom', String(map.getZoom()));
    if (focusFound && found?.link !== undefined) {
      focusFound = false;
      found.link.focus({ preventScroll: true });
    }
  }

  worker.addEventListener('message', (event: MessageEvent<WorkerReply>) => {
    const reply = event.data;
    if (reply.type === 'loaded') {
      building = false;
      buildCost = reply.ms;
      element.dataset.buildMs = reply.ms.toFixed(1);
      query();
      if (indexDirty) schedule();
    } else if (reply.type === 'clusters') {
      if (reply.seq === querySeq) render(reply);
    } else {
      moveProgrammatically(() => map.setView([reply.lat, reply.lng], Math.min(reply.zoom, FIND_ZOOM)));
    }
  });

  function fitNow() {
    if (list.length === 0) return;
    let south = 90;
    let north = -90;
    let west = 180;
    let east = -180;
    for (const v of list) {
      if (v.lat < south) south = v.lat;
      if (v.lat > north) north = v.lat;
      if (v.lng < west) west = v.lng;
      if (v.lng > east) east = v.lng;
    }
    moveProgrammatically(() => map.fitBounds([[south, west], [north, east]], { padding: [40, 40], maxZoom: 15, animate: false }));
  }

  /** Once per animation frame: new positions on screen, and a rebuild when due. */
  function onFrame() {
    frame = 0;
    if (container.clientWidth === 0) return;
    if (needsFit && follow) {
      needsFit = false;
      fitNow();
    }
    if (indexDirty && !building) {
      // Spacing rebuilds by 20 times their cost (at least 250 ms) keeps the worker mostly idle.
      const due = lastBuild + Math.max(250, 20 * buildCost);
      const now = performance.now();
      if (now >= due) {
        rebuild();
      } else if (buildTimer === undefined) {
        buildTimer = window.setTimeout(() => {
          buildTimer = undefined;
          schedule();
        }, due - now);
      }
    }
    for (const v of moved) {
      if (v.marker !== undefined) {
        v.marker.setLatLng([v.lat, v.lng]);
        paint(v);
      }
    }
    moved = new Set();
  }

  function schedule() {
    if (destroyed) return;
    if (frame === 0) frame = requestAnimationFrame(onFrame);
  }

  function inView(lat: number, lng: number): boolean {
    return inner === undefined || inner.contains([lat, lng]);
  }

  map.on('resize', () => {
    if (follow) needsFit = true;
    schedule();
  });
  const resize = new ResizeObserver(() => {
    map.invalidateSize({ pan: false });
    schedule();
  });
  resize.observe(container);

  searchForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const wanted = searchInput.value.trim();
    if (wanted === '') return;
    searchResult.textContent = findVehicle(wanted) ? '' : `No vehicle "${wanted}" on the map.`;
  });
  fitButton.addEventListener('click', () => {
    follow = true;
    needsFit = true;
    schedule();
  });

  function findVehicle(wanted: string): boolean {
    let v = vehicles.get(wanted);
    if (v === undefined) {
      const lower = wanted.toLowerCase();
      const matches = list.filter((c) => c.id.toLowerCase().startsWith(lower));
      if (matches.length === 1) v = matches[0];
    }
    if (v === undefined) return false;
    const previous = found;
    found = v;
    if (previous !== undefined) paint(previous);
    paint(v);
    follow = false;
    focusFound = true;
    // A vehicle not yet in the index is put there first; the view's clusters follow either way.
    if (v.index >= indexed && !building) rebuild();
    moveProgrammatically(() => map.setView([v.lat, v.lng], Math.max(map.getZoom(), FIND_ZOOM), { animate: false }));
    query();
    return true;
  }

  return {
    element,
    setVehicle(id, position, status, heading) {
      let v = vehicles.get(id);
      if (v === undefined) {
        v = { id, index: list.length, lat: position.lat, lng: position.lng, status: status ?? 'unknown', heading };
        vehicles.set(id, v);
        list.push(v);
        if (follow) needsFit = true;
      } else if (follow && !needsFit && !inView(position.lat, position.lng)) {
        // A vehicle leaving the view refits it (unless the person has moved the map).
        needsFit = true;
      }
      v.lat = position.lat;
      v.lng = position.lng;
      if (status !== undefined) v.status = status;
      if (heading !== undefined) v.heading = heading;
      indexDirty = true;
      moved.add(v);
      schedule();
    },
    setStatus(id, status) {
      const v = vehicles.get(id);
      if (v === undefined) return;
      v.status = status;
      paint(v);
    },
    find: findVehicle,
    fit() {
      follow = true;
      needsFit = true;
      schedule();
    },
    destroy() {
      destroyed = true;
      resize.disconnect();
      if (frame !== 0) cancelAnimationFrame(frame);
      window.clearTimeout(buildTimer);
      worker.terminate();
      removeMap(map);
    },
  };
}
