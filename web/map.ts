// The fleet map on Leaflet: map tiles (FLEET_MAP_TILE_URL) over a coordinate grid, vehicles as
// arrows turned to their heading with their id beside them, clustered with supercluster, and a
// search that jumps to a vehicle. Each vehicle's marker is a link to its page, with an
// aria-label and data-vehicle-id.
//
// Built for thousands of vehicles moving every second: setVehicle only records the position;
// once per animation frame the markers on screen move, and the cluster index (a k-d tree per
// zoom level over every vehicle) is rebuilt at most every few hundred milliseconds, never more
// often than its own cost allows. Only what is on screen has a DOM element.
import type { Feature, Point } from 'geojson';
import Supercluster from 'supercluster';
import { h } from './dom.ts';
import L, { addBaseLayers } from './leaflet.ts';

interface Vehicle {
  id: string;
  lat: number;
  lng: number;
  status: string;
  heading: number | undefined;
  feature: Feature<Point, { id: string }>;
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

/** Above this zoom every vehicle stands alone. */
const CLUSTER_MAX_ZOOM = 16;
const FIND_ZOOM = CLUSTER_MAX_ZOOM + 1;

function describe(v: Vehicle): string {
  const heading = v.heading === undefined ? '' : `, heading ${Math.round(v.heading)}°`;
  return `${v.id}, ${v.status}, at ${v.lat.toFixed(5)}, ${v.lng.toFixed(5)}${heading}`;
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
  const shown = new Set<Vehicle>();
  const clusterMarkers: L.Marker[] = [];
  let index: Supercluster<{ id: string }> | undefined;
  let indexDirty = false;
  let moved = new Set<Vehicle>();
  let lastBuild = 0;
  let buildCost = 0;
  let frame = 0;
  let buildTimer: number | undefined;
  /** Until the person pans or zooms, the view keeps every vehicle in sight. */
  let follow = true;
  let needsFit = false;
  let programmatic = false;
  let found: Vehicle | undefined;

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
  map.on('moveend', () => render());

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
    v.link.dataset.status = v.status;
    v.link.dataset.lat = String(v.lat);
    v.link.dataset.lng = String(v.lng);
    v.link.classList.toggle('has-heading', v.heading !== undefined);
    v.link.classList.toggle('found', v === found);
    v.arrow.style.transform = v.heading === undefined ? '' : `rotate(${v.heading}deg)`;
    const text = describe(v);
    v.link.setAttribute('aria-label', text);
    v.link.title = text;
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
        if (index === undefined || !Number.isFinite(id)) return;
        map.setView(m.getLatLng(), Math.min(index.getClusterExpansionZoom(id), FIND_ZOOM));
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

  function rebuild() {
    const started = performance.now();
    const features: Feature<Point, { id: string }>[] = [];
    for (const v of vehicles.values()) features.push(v.feature);
    index = new Supercluster<{ id: string }>({ radius: 60, maxZoom: CLUSTER_MAX_ZOOM }).load(features);
    indexDirty = false;
    lastBuild = performance.now();
    buildCost = lastBuild - started;
  }

  /** Which clusters and vehicles the view shows, from the index. */
  function render() {
    if (index === undefined) return;
    const bounds = map.getBounds().pad(0.1);
    const zoom = map.getZoom();
    const west = Math.max(-180, bounds.getWest());
    const east = Math.min(180, bounds.getEast());
    const items = index.getClusters([west, Math.max(-85, bounds.getSouth()), east, Math.min(85, bounds.getNorth())], zoom);
    const next = new Set<Vehicle>();
    let clusters = 0;
    let clustered = 0;
    for (const item of items) {
      const [lng, lat] = item.geometry.coordinates as [number, number];
      const properties = item.properties as { cluster?: boolean; cluster_id?: number; point_count?: number; id?: string };
      if (properties.cluster === true) {
        const marker = clusterMarker(clusters++);
        marker.setLatLng([lat, lng]);
        const count = properties.point_count ?? 0;
        clustered += count;
        const el = (marker.options.icon as L.DivIcon).options.html as HTMLElement;
        el.dataset.clusterId = String(properties.cluster_id);
        el.dataset.count = String(count);
        el.className = `cluster ${count >= 1000 ? 'cluster-large' : count >= 100 ? 'cluster-medium' : 'cluster-small'}`;
        el.setAttribute('aria-label', `${count} vehicles here; zoom in`);
        (el.firstChild as HTMLElement).textContent = count >= 10_000 ? `${Math.round(count / 1000)}k` : String(count);
        if (!map.hasLayer(marker)) marker.addTo(map);
      } else {
        const v = vehicles.get(properties.id ?? '');
        if (v === undefined) continue;
        next.add(v);
        const marker = markerOf(v);
        marker.setLatLng([v.lat, v.lng]);
        if (!shown.has(v)) marker.addTo(map);
      }
    }
    for (let i = clusters; i < clusterMarkers.length; i++) clusterMarkers[i]!.remove();
    clusterMarkers.length = Math.min(clusterMarkers.length, clusters + 50);
    for (const v of shown) {
      if (!next.has(v)) {
        v.marker?.remove();
        // Its DOM goes; a vehicle far from view keeps no element.
        v.marker = undefined;
        v.link = undefined;
        v.arrow = undefined;
      }
    }
    shown.clear();
    for (const v of next) shown.add(v);
    element.dataset.clusters = String(clusters);
    element.dataset.clustered = String(clustered);
    element.dataset.markers = String(shown.size);
    element.dataset.vehicles = String(vehicles.size);
    element.dataset.zoom = String(zoom);
  }

  function fitNow() {
    if (vehicles.size === 0) return;
    let south = 90;
    let north = -90;
    let west = 180;
    let east = -180;
    for (const v of vehicles.values()) {
      if (v.lat < south) south = v.lat;
      if (v.lat > north) north = v.lat;
      if (v.lng < west) west = v.lng;
      if (v.lng > east) east = v.lng;
    }
    moveProgrammatically(() => map.fitBounds([[south, west], [north, east]], { padding: [40, 40], maxZoom: 15, animate: false }));
  }

  /** Once per animation frame: new positions on screen, and the clusters when due. */
  function onFrame() {
    frame = 0;
    if (container.clientWidth === 0) return;
    if (indexDirty) {
      // Rebuilding costs about the same each time; spacing rebuilds by 20 times that keeps it
      // under 5 % of the main thread, and at least 250 ms apart.
      const due = lastBuild + Math.max(250, 20 * buildCost);
      const now = performance.now();
      if (index === undefined || now >= due || needsFit) {
        rebuild();
      } else if (buildTimer === undefined) {
        buildTimer = window.setTimeout(() => {
          buildTimer = undefined;
          schedule();
        }, due - now);
      }
    }
    if (needsFit && follow) {
      needsFit = false;
      fitNow();
    }
    render();
    for (const v of moved) {
      if (v.marker !== undefined) {
        v.marker.setLatLng([v.lat, v.lng]);
        paint(v);
      }
    }
    moved = new Set();
  }

  function schedule() {
    if (frame === 0) frame = requestAnimationFrame(onFrame);
  }

  function inView(lat: number, lng: number): boolean {
    return map.getBounds().pad(-0.05).contains([lat, lng]);
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
    indexDirty = true;
    schedule();
  });

  function findVehicle(wanted: string): boolean {
    let v = vehicles.get(wanted);
    if (v === undefined) {
      const lower = wanted.toLowerCase();
      const matches = [...vehicles.values()].filter((c) => c.id.toLowerCase().startsWith(lower));
      if (matches.length === 1) v = matches[0];
    }
    if (v === undefined) return false;
    const previous = found;
    found = v;
    if (previous !== undefined) paint(previous);
    follow = false;
    if (indexDirty) rebuild();
    moveProgrammatically(() => map.setView([v.lat, v.lng], Math.max(map.getZoom(), FIND_ZOOM), { animate: false }));
    render();
    paint(v);
    v.link?.focus({ preventScroll: true });
    return true;
  }

  return {
    element,
    setVehicle(id, position, status, heading) {
      let v = vehicles.get(id);
      if (v === undefined) {
        v = {
          id, lat: position.lat, lng: position.lng, status: status ?? 'unknown', heading,
          feature: { type: 'Feature', geometry: { type: 'Point', coordinates: [position.lng, position.lat] }, properties: { id } },
        };
        vehicles.set(id, v);
        if (follow) needsFit = true;
      } else if (follow && !needsFit && !inView(position.lat, position.lng)) {
        // A vehicle leaving the view refits it (unless the person has moved the map).
        needsFit = true;
      }
      v.lat = position.lat;
      v.lng = position.lng;
      v.feature.geometry.coordinates = [position.lng, position.lat];
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
      resize.disconnect();
      if (frame !== 0) cancelAnimationFrame(frame);
      window.clearTimeout(buildTimer);
      map.remove();
    },
  };
}
