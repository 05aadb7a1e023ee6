// A small web-mercator map: a canvas with a lat/lon grid and, when a tile URL is configured and
// tiles load, map tiles beneath it; vehicles as DOM markers positioned over the canvas (links to
// their page, each with an aria-label and data-vehicle-id). Without tiles (none configured, or
// none reachable) the grid alone still places every vehicle. Drag to pan, buttons to zoom and
// to fit the view to the fleet.
import { h } from './dom.ts';

const TILE = 256;
const MAX_ZOOM = 18;
const MAX_LAT = 85.0511287798;

interface Point {
  x: number;
  y: number;
}

interface Vehicle {
  lat: number;
  lng: number;
  status: string;
  marker: HTMLAnchorElement;
}

export interface FleetMap {
  element: HTMLElement;
  setVehicle(id: string, position: { lat: number; lng: number }, status?: string): void;
  setStatus(id: string, status: string): void;
  fit(): void;
  destroy(): void;
}

/** World pixel coordinates at zoom `z` (fractional zooms allowed). */
function project(lat: number, lng: number, z: number): Point {
  const scale = TILE * 2 ** z;
  const clamped = Math.max(-MAX_LAT, Math.min(MAX_LAT, lat));
  const sin = Math.sin((clamped * Math.PI) / 180);
  return {
    x: ((lng + 180) / 360) * scale,
    y: (0.5 - Math.log((1 + sin) / (1 - sin)) / (4 * Math.PI)) * scale,
  };
}

function unproject(p: Point, z: number): { lat: number; lng: number } {
  const scale = TILE * 2 ** z;
  const lng = (p.x / scale) * 360 - 180;
  const n = Math.PI - (2 * Math.PI * p.y) / scale;
  const lat = (180 / Math.PI) * Math.atan(Math.sinh(n));
  return { lat, lng };
}

const GRID_STEPS = [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45];

function label(value: number, step: number, positive: string, negative: string): string {
  const digits = Math.max(0, Math.ceil(-Math.log10(step)));
  return `${Math.abs(value).toFixed(digits)}°${value === 0 ? '' : value > 0 ? positive : negative}`;
}

export function createMap(options: { tileUrl: string; attribution?: string }): FleetMap {
  const canvas = h('canvas', { class: 'map-canvas', 'aria-hidden': 'true' });
  const markers = h('div', { class: 'map-markers' });
  const note = h('p', { class: 'map-note', role: 'status' });
  const zoomIn = h('button', { type: 'button', 'aria-label': 'Zoom in', title: 'Zoom in' }, '+');
  const zoomOut = h('button', { type: 'button', 'aria-label': 'Zoom out', title: 'Zoom out' }, '−');
  const fitButton = h('button', { type: 'button', title: 'Show every vehicle' }, 'Fit');
  const controls = h('div', { class: 'map-controls' }, zoomIn, zoomOut, fitButton);
  const attribution = options.tileUrl === '' || options.attribution === undefined ? null : h('p', { class: 'map-attribution' }, options.attribution);
  const viewport = h('div', { class: 'map-viewport' }, canvas, markers);
  const element = h('div', { class: 'map', role: 'region', 'aria-label': 'Map of the fleet' }, viewport, controls, note, attribution);

  const vehicles = new Map<string, Vehicle>();
  const tiles = new Map<string, HTMLImageElement | 'failed'>();
  let zoom = 2;
  let center: Point = project(20, 0, zoom);
  /** Until the person pans or zooms, the view keeps every vehicle in sight. */
  let follow = true;
  let needsFit = false;
  let width = 0;
  let height = 0;
  let frame = 0;
  let tilesLoaded = 0;
  let tilesFailed = 0;

  const origin = (): Point => ({ x: center.x - width / 2, y: center.y - height / 2 });

  function tile(z: number, x: number, y: number): HTMLImageElement | undefined {
    const key = `${z}/${x}/${y}`;
    const known = tiles.get(key);
    if (known === 'failed') return undefined;
    if (known !== undefined) return known.complete && known.naturalWidth > 0 ? known : undefined;
    const img = new Image();
    img.decoding = 'async';
    img.referrerPolicy = 'no-referrer';
    img.addEventListener('load', () => {
      tilesLoaded++;
      schedule();
    });
    img.addEventListener('error', () => {
      tiles.set(key, 'failed');
      tilesFailed++;
      schedule();
    });
    img.src = options.tileUrl.replace('{z}', String(z)).replace('{x}', String(x)).replace('{y}', String(y));
    tiles.set(key, img);
    return undefined;
  }

  function draw() {
    frame = 0;
    const ratio = window.devicePixelRatio || 1;
    const rect = viewport.getBoundingClientRect();
    width = rect.width;
    height = rect.height;
    if (needsFit && width > 0) {
      needsFit = false;
      fitNow();
    }
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const ctx = canvas.getContext('2d');
    if (ctx === null || width === 0) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = '#eef2f5';
    ctx.fillRect(0, 0, width, height);
    const o = origin();

    const useTiles = options.tileUrl !== '';
    if (useTiles) {
      const n = 2 ** zoom;
      for (let ty = Math.floor(o.y / TILE); ty * TILE < o.y + height; ty++) {
        if (ty < 0 || ty >= n) continue;
        for (let tx = Math.floor(o.x / TILE); tx * TILE < o.x + width; tx++) {
          const img = tile(zoom, ((tx % n) + n) % n, ty);
          if (img !== undefined) ctx.drawImage(img, tx * TILE - o.x, ty * TILE - o.y, TILE, TILE);
        }
      }
    }
    drawGrid(ctx, o);
    placeMarkers();

    if (!useTiles) note.textContent = 'Coordinate grid (no map tiles configured).';
    else if (tilesLoaded === 0 && tilesFailed > 0) note.textContent = 'Map tiles could not be loaded; showing the coordinate grid.';
    else note.textContent = '';
  }

  function drawGrid(ctx: CanvasRenderingContext2D, o: Point) {
    const topLeft = unproject(o, zoom);
    const bottomRight = unproject({ x: o.x + width, y: o.y + height }, zoom);
    const spanLng = Math.max(1e-9, bottomRight.lng - topLeft.lng);
    // Lines about every 100 px.
    const wanted = (spanLng * 100) / Math.max(1, width);
    const step = GRID_STEPS.find((s) => s >= wanted) ?? 45;
    ctx.strokeStyle = 'rgba(40, 60, 80, 0.25)';
    ctx.lineWidth = 1;
    ctx.fillStyle = 'rgba(20, 30, 40, 0.8)';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (let lng = Math.ceil(topLeft.lng / step) * step; lng <= bottomRight.lng; lng += step) {
      const x = Math.round(project(0, lng, zoom).x - o.x) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, 0);
      ctx.lineTo(x, height);
      ctx.stroke();
      ctx.fillText(label(lng, step, 'E', 'W'), x + 3, height - 15);
    }
    const lowLat = Math.max(-MAX_LAT, bottomRight.lat);
    const highLat = Math.min(MAX_LAT, topLeft.lat);
    const latStep = step;
    for (let lat = Math.ceil(lowLat / latStep) * latStep; lat <= highLat; lat += latStep) {
      const y = Math.round(project(lat, 0, zoom).y - o.y) + 0.5;
      ctx.beginPath();
      ctx.moveTo(0, y);
      ctx.lineTo(width, y);
      ctx.stroke();
      ctx.fillText(label(lat, latStep, 'N', 'S'), 3, y + 2);
    }
  }

  function placeMarkers() {
    const o = origin();
    for (const vehicle of vehicles.values()) {
      const p = project(vehicle.lat, vehicle.lng, zoom);
      const x = p.x - o.x;
      const y = p.y - o.y;
      vehicle.marker.style.left = `${x.toFixed(1)}px`;
      vehicle.marker.style.top = `${y.toFixed(1)}px`;
      vehicle.marker.hidden = x < -20 || y < -20 || x > width + 20 || y > height + 20;
    }
  }

  function schedule() {
    if (frame === 0) frame = requestAnimationFrame(draw);
  }

  function fit() {
    follow = true;
    needsFit = true;
    schedule();
  }

  /** Is this position inside the view, away from its edges? */
  function inView(lat: number, lng: number): boolean {
    const o = origin();
    const p = project(lat, lng, zoom);
    return p.x - o.x > 24 && p.y - o.y > 24 && p.x - o.x < width - 24 && p.y - o.y < height - 24;
  }

  function fitNow() {
    const list = [...vehicles.values()];
    if (list.length === 0) return;
    const lats = list.map((v) => v.lat);
    const lngs = list.map((v) => v.lng);
    const north = Math.max(...lats);
    const south = Math.min(...lats);
    const east = Math.max(...lngs);
    const west = Math.min(...lngs);
    const pad = 48;
    let z = MAX_ZOOM - 4;
    for (; z > 0; z--) {
      const a = project(north, west, z);
      const b = project(south, east, z);
      if (b.x - a.x <= width - 2 * pad && b.y - a.y <= height - 2 * pad) break;
    }
    zoom = z;
    const a = project(north, west, z);
    const b = project(south, east, z);
    center = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  }

  function setZoom(next: number) {
    const z = Math.max(0, Math.min(MAX_ZOOM, next));
    if (z === zoom) return;
    const factor = 2 ** (z - zoom);
    center = { x: center.x * factor, y: center.y * factor };
    zoom = z;
    follow = false;
    schedule();
  }

  zoomIn.addEventListener('click', () => setZoom(zoom + 1));
  zoomOut.addEventListener('click', () => setZoom(zoom - 1));
  fitButton.addEventListener('click', fit);

  // Drag to pan (mouse, pen or touch).
  let drag: { x: number; y: number; center: Point } | undefined;
  viewport.addEventListener('pointerdown', (event: PointerEvent) => {
    if ((event.target as Element).closest('.marker') !== null) return;
    drag = { x: event.clientX, y: event.clientY, center };
    viewport.setPointerCapture(event.pointerId);
  });
  viewport.addEventListener('pointermove', (event: PointerEvent) => {
    if (drag === undefined) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (follow && Math.abs(dx) + Math.abs(dy) < 3) return;
    center = { x: drag.center.x - dx, y: drag.center.y - dy };
    follow = false;
    schedule();
  });
  const endDrag = () => {
    drag = undefined;
  };
  viewport.addEventListener('pointerup', endDrag);
  viewport.addEventListener('pointercancel', endDrag);

  const resize = new ResizeObserver(() => {
    if (follow) needsFit = true;
    schedule();
  });
  resize.observe(viewport);

  function describe(id: string, v: Pick<Vehicle, 'lat' | 'lng' | 'status'>): string {
    return `${id}, ${v.status}, at ${v.lat.toFixed(5)}, ${v.lng.toFixed(5)}`;
  }

  return {
    element,
    setVehicle(id, position, status) {
      let vehicle = vehicles.get(id);
      // A new vehicle, or one leaving the view, refits it (unless the person has moved the map).
      if (follow && (vehicle === undefined || !inView(position.lat, position.lng))) needsFit = true;
      if (vehicle === undefined) {
        const marker = h('a', { class: 'marker', href: `#/vehicles/${encodeURIComponent(id)}`, 'data-vehicle-id': id },
          h('span', { class: 'marker-label' }, id));
        vehicle = { lat: position.lat, lng: position.lng, status: status ?? 'unknown', marker };
        vehicles.set(id, vehicle);
        markers.append(marker);
        // Many names would cover each other: then they show on hover and focus only.
        markers.classList.toggle('crowded', vehicles.size > 20);
      }
      vehicle.lat = position.lat;
      vehicle.lng = position.lng;
      if (status !== undefined) vehicle.status = status;
      vehicle.marker.dataset.status = vehicle.status;
      vehicle.marker.dataset.lat = String(position.lat);
      vehicle.marker.dataset.lng = String(position.lng);
      vehicle.marker.setAttribute('aria-label', describe(id, vehicle));
      vehicle.marker.title = describe(id, vehicle);
      schedule();
    },
    setStatus(id, status) {
      const vehicle = vehicles.get(id);
      if (vehicle === undefined) return;
      vehicle.status = status;
      vehicle.marker.dataset.status = status;
      vehicle.marker.setAttribute('aria-label', describe(id, vehicle));
    },
    fit,
    destroy() {
      resize.disconnect();
      if (frame !== 0) cancelAnimationFrame(frame);
    },
  };
}
