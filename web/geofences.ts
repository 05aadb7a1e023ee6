// Geofences on a map: the organization's geofences listed and drawn, new ones drawn as polygons,
// rectangles or circles with the Leaflet-Geoman tools, a selected one's shape edited by dragging
// its vertices (or centre and radius), and each saved, replaced or deleted through the API
// (docs/API.md "Geofences"). The service judges the geometry: its problem (an open or crossing
// ring, a radius out of range) is shown as it says it. A selected geofence lists the vehicles
// inside it now.
import '@geoman-io/leaflet-geoman-free';
import { api, encode, explain, type Geofence, type GeofenceGeometry } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { known } from './fleet.ts';
import L, { addBaseLayers, asText, removeMap } from './leaflet.ts';

type Position = number[];
export type Geometry = GeofenceGeometry;
export type { Geofence };

interface GeofenceList {
  geofences: Geofence[];
  total: number;
  limit: number;
  offset: number;
  nextOffset: number | null;
}

type Shape = L.Polygon | L.Circle;

interface Entry {
  record: Geofence;
  layer: Shape;
  item: HTMLLIElement;
  count: HTMLElement;
  /** Its pin, while the shape is too small on screen to see or click (PIN_BELOW_PX). */
  pin?: L.CircleMarker;
}

const PAGE = 1000;
/** Geofences whose "inside now" count the list fetches at once. */
const COUNTED = 100;
const STYLE = { color: '#1f6feb', weight: 2, fillOpacity: 0.12 };
/** A geofence drawn smaller than this (px, its longer side) at the map's zoom also shows a pin of fixed size. */
const PIN_BELOW_PX = 14;
const PIN = { radius: 7, color: '#1f6feb', weight: 2, dashArray: '3 3', fillColor: '#1f6feb', fillOpacity: 0.35, className: 'geofence-pin' };
const SELECTED = { color: '#bc4c00', weight: 3, fillOpacity: 0.2 };

function problemBox(error: unknown): HTMLElement {
  const { title, detail } = explain(error);
  return h('div', { class: 'problem', role: 'alert' }, h('strong', {}, title), detail === '' ? null : h('p', {}, detail));
}

function kind(g: Geometry): string {
  if (g.type === 'Circle') return `circle, ${g.radius >= 1000 ? `${(g.radius / 1000).toFixed(2)} km` : `${Math.round(g.radius)} m`}`;
  if (g.type === 'Polygon') return `polygon, ${g.coordinates[0]!.length - 1} corners`;
  return `${g.coordinates.length} polygons`;
}

/** The Leaflet shape of an API geometry ([lng, lat] rings, closed) . */
export function layerOf(g: Geometry): Shape {
  if (g.type === 'Circle') return L.circle([g.coordinates[1]!, g.coordinates[0]!], { ...STYLE, radius: g.radius });
  const ring = (r: Position[]) => r.slice(0, -1).map(([lng, lat]) => L.latLng(lat!, lng!));
  if (g.type === 'Polygon') return L.polygon(g.coordinates.map(ring), STYLE);
  return L.polygon(g.coordinates.map((polygon) => polygon.map(ring)), STYLE);
}

/** The API geometry of a Leaflet shape: a circle in metres, or a GeoJSON (Multi)Polygon. */
export function geometryOf(layer: Shape): Geometry {
  if (layer instanceof L.Circle) {
    const c = layer.getLatLng();
    return { type: 'Circle', coordinates: [Number(c.lng.toFixed(7)), Number(c.lat.toFixed(7))], radius: Math.round(layer.getRadius() * 10) / 10 };
  }
  return layer.toGeoJSON(7).geometry;
}

export function renderGeofences(root: HTMLElement, ctx: { tileUrl: string }): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const listStatus = h('div', { class: 'list-message', 'aria-live': 'polite' });
  const list = h('ul', { class: 'geofence-list', 'aria-label': 'Geofences' });
  const nameInput = h('input', { id: 'geofence-name', name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
  const vehiclesInput = h('input', {
    id: 'geofence-vehicles', name: 'vehicleIds', autocomplete: 'off', spellcheck: 'false', placeholder: 'every vehicle', 'aria-describedby': 'geofence-vehicles-help',
  });
  const saveButton = h('button', { type: 'submit', class: 'primary', id: 'geofence-save' }, 'Save');
  const deleteButton = h('button', { type: 'button', id: 'geofence-delete', class: 'danger' }, 'Delete');
  const cancelButton = h('button', { type: 'button', id: 'geofence-cancel' }, 'Cancel');
  const editorTitle = h('h2', { id: 'geofence-editor-title' }, 'Geofence');
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const meta = h('p', { class: 'muted geofence-meta' });
  const insideBox = h('div', { class: 'geofence-inside', 'aria-live': 'polite' });
  const editor = h('form', { class: 'card geofence-editor', 'aria-labelledby': 'geofence-editor-title', hidden: true },
    editorTitle, meta,
    h('label', { for: 'geofence-name' }, 'Name'), nameInput,
    h('label', { for: 'geofence-vehicles' }, 'Applies to'), vehiclesInput,
    h('p', { id: 'geofence-vehicles-help', class: 'muted' }, 'Vehicle ids separated by commas; empty for every vehicle. Drag the shape\'s handles on the map to change it.'),
    h('div', { class: 'buttons' }, saveButton, deleteButton, cancelButton),
    feedback,
    insideBox);
  const mapBox = h('div', { class: 'map-view geofence-map-view' });
  const note = h('p', { class: 'map-note', role: 'status' });

  replace(root,
    h('section', { class: 'geofences', 'aria-labelledby': 'geofences-title' },
      h('h1', { id: 'geofences-title' }, 'Geofences'),
      h('p', { class: 'muted' }, 'Draw a new geofence with the polygon, rectangle or circle tool on the map; select one to edit it.'),
      h('div', { class: 'geofence-layout' },
        h('div', { class: 'geofence-side' }, listStatus, list, editor),
        h('div', { class: 'map geofence-map' }, mapBox, note))));

  const map = L.map(mapBox, { zoomControl: true, minZoom: 1, maxZoom: 19, preferCanvas: false });
  map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
  map.setView([20, 0], 2);
  addBaseLayers(map, ctx.tileUrl, (text) => {
    note.textContent = text;
  });
  const resize = new ResizeObserver(() => map.invalidateSize({ pan: false }));
  resize.observe(mapBox);
  map.pm.addControls({
    position: 'topleft',
    drawMarker: false, drawCircleMarker: false, drawPolyline: false, drawText: false,
    drawPolygon: true, drawRectangle: true, drawCircle: true,
    editMode: false, dragMode: false, cutPolygon: false, removalMode: false, rotateMode: false,
  });

  // The vehicles the live stream has placed, for reference (not editable).
  const dots = L.layerGroup().addTo(map);
  const renderer = L.canvas();
  for (const [id, v] of known) {
    if (v.lat === undefined || v.lng === undefined) continue;
    L.circleMarker([v.lat, v.lng], { renderer, radius: 4, color: '#1a7f37', weight: 1, fillOpacity: 0.8 }).bindTooltip(asText(id)).addTo(dots);
  }

  const entries = new Map<string, Entry>();
  let selected: Entry | undefined;
  let draft: Shape | undefined;
  let confirming = false;

  function editable(layer: Shape, on: boolean) {
    layer.setStyle(on ? SELECTED : STYLE);
    if (on) layer.pm.enable({ allowSelfIntersection: true });
    else layer.pm.disable();
  }

  function resetDelete() {
    confirming = false;
    deleteButton.textContent = 'Delete';
  }

  function openEditor(title: string, g: Geofence | undefined) {
    editor.hidden = false;
    editorTitle.textContent = title;
    nameInput.value = g?.name ?? '';
    vehiclesInput.value = g?.vehicleIds?.join(', ') ?? '';
    deleteButton.hidden = g === undefined;
    meta.textContent = g === undefined ? 'Not saved yet.' : `${kind(g.geometry)} · ${g.id} · changed ${formatTime(g.updatedAt)}`;
    replace(feedback);
    replace(insideBox);
    resetDelete();
  }

  function closeEditor() {
    editor.hidden = true;
    if (selected !== undefined) {
      // Unsaved changes of the shape are put back.
      const restored = layerOf(selected.record.geometry);
      selected.layer.remove();
      attach(selected, restored);
      selected.item.classList.remove('selected');
      selected.item.querySelector('button')?.setAttribute('aria-pressed', 'false');
      selected = undefined;
    }
    if (draft !== undefined) {
      draft.remove();
      draft = undefined;
    }
  }

  function attach(entry: Entry, layer: Shape) {
    entry.layer = layer;
    layer.bindTooltip(asText(entry.record.name));
    layer.on('click', () => select(entry, false));
    layer.addTo(map);
    placePin(entry);
  }

  // A geofence of tens of metres is a dot at a city's zoom (a delivery stop among a fleet's
  // depots): a pin of fixed size marks it there, names it and selects it, until the zoom shows it.
  const pins = L.layerGroup().addTo(map);
  function placePin(entry: Entry) {
    // A circle's own bounds are in pixels of the zoom it was last drawn at; these are in metres.
    const { layer } = entry;
    const bounds = layer instanceof L.Circle ? layer.getLatLng().toBounds(layer.getRadius() * 2) : layer.getBounds();
    const [a, b] = [map.latLngToLayerPoint(bounds.getNorthWest()), map.latLngToLayerPoint(bounds.getSouthEast())];
    if (Math.max(Math.abs(a.x - b.x), Math.abs(a.y - b.y)) >= PIN_BELOW_PX) {
      entry.pin?.remove();
      delete entry.pin;
      return;
    }
    if (entry.pin !== undefined) {
      entry.pin.setLatLng(bounds.getCenter()).setTooltipContent(asText(entry.record.name));
      return;
    }
    const pin = L.circleMarker(bounds.getCenter(), PIN).bindTooltip(asText(entry.record.name));
    pin.on('click', () => select(entry, true));
    entry.pin = pin.addTo(pins);
  }
  map.on('zoomend', () => {
    for (const entry of entries.values()) placePin(entry);
  });

  async function loadInside(entry: Entry, into?: HTMLElement) {
    try {
      const { vehicleIds } = await api<{ vehicleIds: string[] }>('GET', `/v2/geofences/${encode(entry.record.id)}/vehicles`, { signal });
      entry.count.textContent = `· ${vehicleIds.length} inside`;
      entry.count.dataset.inside = String(vehicleIds.length);
      if (into === undefined) return;
      replace(into, h('h3', {}, `Vehicles inside now (${vehicleIds.length})`),
        vehicleIds.length === 0
          ? h('p', { class: 'muted' }, 'None.')
          : h('ul', { class: 'inside-list' }, ...vehicleIds.map((id) => h('li', {}, h('a', { href: `#/vehicles/${encode(id)}`, 'data-vehicle-id': id }, id)))));
    } catch (error) {
      if (signal.aborted) return;
      if (into !== undefined) replace(into, problemBox(error));
    }
  }

  function select(entry: Entry, fly: boolean) {
    if (selected === entry) return;
    closeEditor();
    selected = entry;
    entry.item.classList.add('selected');
    entry.item.querySelector('button')?.setAttribute('aria-pressed', 'true');
    editable(entry.layer, true);
    openEditor(entry.record.name, entry.record);
    if (fly) map.fitBounds(entry.layer.getBounds(), { padding: [40, 40], maxZoom: 17 });
    replace(insideBox, h('p', { class: 'loading', role: 'status' }, 'Finding the vehicles inside…'));
    void loadInside(entry, insideBox);
  }

  function add(record: Geofence, layer: Shape = layerOf(record.geometry)): Entry {
    const button = h('button', { type: 'button', class: 'link', 'aria-pressed': 'false' }, record.name);
    const count = h('span', { class: 'muted geofence-count' });
    const item = h('li', { 'data-geofence-id': record.id }, button, ' ', h('span', { class: 'muted' }, kind(record.geometry)), ' ', count);
    const entry: Entry = { record, layer, item, count };
    attach(entry, layer);
    button.addEventListener('click', () => select(entry, true));
    entries.set(record.id, entry);
    list.append(item);
    return entry;
  }

  function update(entry: Entry, record: Geofence) {
    entry.record = record;
    const button = entry.item.querySelector('button')!;
    button.textContent = record.name;
    const kindText = entry.item.querySelector('span.muted:not(.geofence-count)');
    if (kindText !== null) kindText.textContent = kind(record.geometry);
    entry.layer.unbindTooltip().bindTooltip(asText(record.name));
    placePin(entry);
  }

  function showEmpty() {
    if (entries.size === 0) replace(listStatus, h('p', { class: 'empty' }, 'No geofences yet.'));
    else replace(listStatus);
  }

  async function loadList() {
    replace(listStatus, h('p', { class: 'loading', role: 'status' }, 'Loading geofences…'));
    try {
      // A page of large geofences holds fewer than PAGE: the next starts where this one ended.
      for (let offset: number | null = 0; offset !== null;) {
        const page: GeofenceList = await api<GeofenceList>('GET', '/v2/geofences', { query: { limit: PAGE, offset }, signal });
        for (const record of page.geofences) add(record);
        offset = page.nextOffset;
      }
      showEmpty();
      const all = [...entries.values()];
      if (all.length > 0) {
        const bounds = L.latLngBounds([]);
        for (const e of all) bounds.extend(e.layer.getBounds());
        map.fitBounds(bounds, { padding: [40, 40], maxZoom: 15 });
      } else if (known.size > 0) {
        const bounds = L.latLngBounds([]);
        for (const v of known.values()) if (v.lat !== undefined && v.lng !== undefined) bounds.extend([v.lat, v.lng]);
        if (bounds.isValid()) map.fitBounds(bounds, { padding: [40, 40], maxZoom: 15 });
      }
      await Promise.all(all.slice(0, COUNTED).map((e) => loadInside(e)));
    } catch (error) {
      if (signal.aborted) return;
      replace(listStatus, problemBox(error));
    }
  }

  map.on('pm:create', (event) => {
    const created = event.layer;
    if (!(created instanceof L.Polygon) && !(created instanceof L.Circle)) {
      created.remove();
      return;
    }
    const layer: Shape = created;
    closeEditor();
    draft = layer;
    editable(layer, true);
    openEditor('New geofence', undefined);
    nameInput.focus();
  });

  editor.addEventListener('submit', (event) => {
    event.preventDefault();
    const layer = draft ?? selected?.layer;
    if (layer === undefined) return;
    const ids = vehiclesInput.value.split(',').map((s) => s.trim()).filter((s) => s !== '');
    const body = { name: nameInput.value.trim(), geometry: geometryOf(layer), ...(ids.length > 0 ? { vehicleIds: ids } : {}) };
    const editing = selected;
    void (async () => {
      saveButton.disabled = true;
      replace(feedback, h('p', { class: 'loading', role: 'status' }, 'Saving…'));
      try {
        if (editing === undefined) {
          const created = await api<Geofence>('POST', '/v2/geofences', { body, signal });
          editable(layer, false);
          draft = undefined;
          layer.remove();
          const entry = add(created);
          showEmpty();
          select(entry, false);
          replace(feedback, h('p', { class: 'ok', role: 'status' }, `Created ${created.name}.`));
        } else {
          const saved = await api<Geofence>('PUT', `/v2/geofences/${encode(editing.record.id)}`, { body, signal });
          update(editing, saved);
          openEditor(saved.name, saved);
          replace(feedback, h('p', { class: 'ok', role: 'status' }, `Saved ${saved.name}.`));
          void loadInside(editing, insideBox);
        }
      } catch (error) {
        if (signal.aborted) return;
        replace(feedback, problemBox(error));
      } finally {
        saveButton.disabled = false;
      }
    })();
  });

  deleteButton.addEventListener('click', () => {
    const entry = selected;
    if (entry === undefined) return;
    if (!confirming) {
      confirming = true;
      deleteButton.textContent = `Delete "${entry.record.name}" now`;
      replace(feedback, h('p', { class: 'warning', role: 'status' }, 'Deleting cannot be undone. Press again to delete.'));
      return;
    }
    void (async () => {
      deleteButton.disabled = true;
      try {
        await api('DELETE', `/v2/geofences/${encode(entry.record.id)}`, { signal });
        editable(entry.layer, false);
        entry.layer.remove();
        entry.pin?.remove();
        entry.item.remove();
        entries.delete(entry.record.id);
        selected = undefined;
        editor.hidden = true;
        showEmpty();
        replace(listStatus, h('p', { class: 'ok', role: 'status' }, `Deleted ${entry.record.name}.`));
      } catch (error) {
        if (signal.aborted) return;
        resetDelete();
        replace(feedback, problemBox(error));
      } finally {
        deleteButton.disabled = false;
      }
    })();
  });

  cancelButton.addEventListener('click', () => closeEditor());

  void loadList();

  return () => {
    controller.abort();
    resize.disconnect();
    removeMap(map);
  };
}
