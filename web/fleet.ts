// The fleet page: counts by status, filters by status, type and group, one page of the vehicle
// list (the API's limit/offset paging, each vehicle's groups by name), and the map. Battery, position and last update follow the
// live stream; the map shows every vehicle the stream reports, not only the current page.
import { api, encode, explain, type VehicleList, type VehicleListItem } from './api.ts';
import { formatBattery, formatTime, h, replace } from './dom.ts';
import { type Group, groupNames, readGroups } from './groups.ts';
import type { Live, LiveMessage } from './live.ts';
import { createMap } from './map.ts';
import { STATUSES, TYPES } from './transitions.ts';

export interface Known {
  lat?: number;
  lng?: number;
  heading?: number;
  status?: string;
  battery?: number;
  lastUpdate?: string;
}

/** What the stream has told us about each vehicle, kept across pages and views. */
export const known = new Map<string, Known>();

export function remember(message: LiveMessage): void {
  const entry = known.get(message.vehicleId) ?? {};
  if (message.type === 'status') {
    entry.status = message.data.to;
  } else {
    if (message.data.location !== undefined) {
      entry.lat = message.data.location.lat;
      entry.lng = message.data.location.lng;
    }
    if (message.data.heading !== undefined) entry.heading = message.data.heading;
    if (message.data.battery !== undefined) entry.battery = message.data.battery;
    if (entry.lastUpdate === undefined || message.timestamp > entry.lastUpdate) entry.lastUpdate = message.timestamp;
  }
  known.set(message.vehicleId, entry);
}

const PAGE_SIZES = [10, 25, 50, 100];
const filters = { status: '', type: '', groupId: '', offset: 0, limit: 25 };

interface Row {
  status: HTMLElement;
  battery: HTMLElement;
  lastUpdate: HTMLElement;
  position: HTMLElement;
}

export function badge(status: string): HTMLElement {
  return h('span', { class: `badge status-${status}` }, status);
}

function problemBox(error: unknown): HTMLElement {
  const { title, detail } = explain(error);
  return h('div', { class: 'problem', role: 'alert' }, h('strong', {}, title), detail === '' ? null : h('p', {}, detail));
}

function positionText(lat: number | undefined, lng: number | undefined): string {
  return lat === undefined || lng === undefined ? '—' : `${lat.toFixed(4)}, ${lng.toFixed(4)}`;
}

export function renderFleet(root: HTMLElement, ctx: { live: Live; tileUrl: string }): () => void {
  const controller = new AbortController();
  const countsBox = h('div', { class: 'counts', role: 'group', 'aria-label': 'Vehicles by status' });
  const statusSelect = h('select', { id: 'status-filter', name: 'status' },
    h('option', { value: '' }, 'All statuses'), ...STATUSES.map((s) => h('option', { value: s }, s)));
  const typeSelect = h('select', { id: 'type-filter', name: 'type' },
    h('option', { value: '' }, 'All types'), ...TYPES.map((t) => h('option', { value: t }, t)));
  // Its groups are offered once read; until then (or when they cannot be read) only "All groups".
  const groupSelect = h('select', { id: 'group-filter', name: 'groupId', disabled: true }, h('option', { value: '' }, 'All groups'));
  const sizeSelect = h('select', { id: 'page-size', name: 'limit' }, ...PAGE_SIZES.map((n) => h('option', { value: n }, String(n))));
  statusSelect.value = filters.status;
  typeSelect.value = filters.type;
  sizeSelect.value = String(filters.limit);
  const filterForm = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter vehicles' },
    h('label', {}, 'Status ', statusSelect), h('label', {}, 'Type ', typeSelect), h('label', {}, 'Group ', groupSelect),
    h('label', {}, 'Per page ', sizeSelect));
  const message = h('div', { class: 'list-message', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const table = h('table', { class: 'vehicles', 'aria-label': 'Vehicles' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Vehicle'), h('th', { scope: 'col' }, 'Type'), h('th', { scope: 'col' }, 'Status'),
      h('th', { scope: 'col', class: 'num' }, 'Battery'), h('th', { scope: 'col' }, 'Last update'), h('th', { scope: 'col' }, 'Position'),
      h('th', { scope: 'col' }, 'Groups'))),
    tbody);
  const prev = h('button', { type: 'button', id: 'page-prev' }, '← Previous');
  const next = h('button', { type: 'button', id: 'page-next' }, 'Next →');
  const pageInfo = h('span', { class: 'page-info', 'aria-live': 'polite' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, pageInfo, next);
  const map = createMap({ tileUrl: ctx.tileUrl });

  replace(root,
    h('section', { class: 'fleet', 'aria-labelledby': 'fleet-title' },
      h('h1', { id: 'fleet-title' }, 'Fleet'),
      countsBox,
      filterForm,
      h('div', { class: 'fleet-layout' },
        h('div', { class: 'fleet-list' }, message, h('div', { class: 'table-wrap' }, table), pager),
        h('div', { class: 'fleet-map' }, map.element))));

  const rows = new Map<string, Row>();
  let listToken = 0;
  let groupsById = new Map<string, Group>();

  /** Reads the groups: their names for the list, and the group filter's choices. */
  async function loadGroups() {
    try {
      const groups = await readGroups(controller.signal);
      groupsById = new Map(groups.map((g) => [g.id, g]));
      replace(groupSelect, h('option', { value: '' }, 'All groups'), ...groups.map((g) => h('option', { value: g.id }, g.name)));
      groupSelect.disabled = false;
      // A group chosen on an earlier visit that is gone since: the filter is let go.
      if (filters.groupId !== '' && !groupsById.has(filters.groupId)) filters.groupId = '';
      groupSelect.value = filters.groupId;
    } catch {
      // The list shows the ids then; a page without groups is still the fleet.
    }
  }

  async function loadCounts() {
    try {
      const type = filters.type === '' ? undefined : filters.type;
      const groupId = filters.groupId === '' ? undefined : filters.groupId;
      const totals = await Promise.all(['', ...STATUSES].map((status) =>
        api<VehicleList>('GET', '/v2/fleet/vehicles', {
          query: { status: status === '' ? undefined : status, type, groupId, limit: 1 }, signal: controller.signal,
        })
          .then((list) => list.total)));
      replace(countsBox, ...['', ...STATUSES].map((status, i) => {
        const pressed = filters.status === status;
        const button = h('button', {
          type: 'button', class: `count${status === '' ? '' : ` status-${status}`}`, 'aria-pressed': String(pressed), 'data-status': status || 'all',
        }, h('span', { class: 'count-n' }, totals[i] ?? 0), h('span', { class: 'count-label' }, status === '' ? 'all' : status));
        button.addEventListener('click', () => setFilter({ status }));
        return button;
      }));
    } catch (error) {
      if (controller.signal.aborted) return;
      replace(countsBox, problemBox(error));
    }
  }

  function rowOf(vehicle: VehicleListItem): HTMLTableRowElement {
    const live = known.get(vehicle.id);
    const status = live?.status ?? vehicle.status;
    const battery = live?.battery ?? vehicle.battery;
    const lastUpdate = [live?.lastUpdate, vehicle.lastUpdate].filter((t) => t !== undefined && t !== null).sort().pop();
    const lat = live?.lat ?? vehicle.location?.lat;
    const lng = live?.lng ?? vehicle.location?.lng;
    const cells: Row = {
      status: h('td', { class: 'cell-status' }, badge(status)),
      battery: h('td', { class: 'num cell-battery' }, formatBattery(battery)),
      lastUpdate: h('td', { class: 'cell-updated' }, formatTime(lastUpdate)),
      position: h('td', { class: 'cell-position' }, positionText(lat, lng)),
    };
    rows.set(vehicle.id, cells);
    if (lat !== undefined && lng !== undefined) map.setVehicle(vehicle.id, { lat, lng }, status);
    return h('tr', { 'data-vehicle-id': vehicle.id },
      h('th', { scope: 'row' }, h('a', { href: `#/vehicles/${encode(vehicle.id)}` }, vehicle.id)),
      h('td', {}, vehicle.type), cells.status, cells.battery, cells.lastUpdate, cells.position,
      h('td', { class: 'cell-groups' }, groupNames(vehicle.groupIds, groupsById)));
  }

  async function loadList() {
    const token = ++listToken;
    table.setAttribute('aria-busy', 'true');
    replace(message, h('p', { class: 'loading', role: 'status' }, 'Loading vehicles…'));
    prev.disabled = true;
    next.disabled = true;
    try {
      const list = await api<VehicleList>('GET', '/v2/fleet/vehicles', {
        query: {
          status: filters.status || undefined, type: filters.type || undefined, groupId: filters.groupId || undefined,
          limit: filters.limit, offset: filters.offset,
        },
        signal: controller.signal,
      });
      if (token !== listToken) return;
      rows.clear();
      replace(tbody, ...list.vehicles.map(rowOf));
      replace(message);
      if (list.vehicles.length === 0) {
        replace(message, h('p', { class: 'empty' }, list.total === 0 ? 'No vehicles match these filters.' : 'No vehicles on this page.'));
      }
      const first = list.vehicles.length === 0 ? 0 : list.offset + 1;
      pageInfo.textContent = `${first}–${list.offset + list.vehicles.length} of ${list.total}`;
      prev.disabled = list.offset === 0;
      next.disabled = list.offset + list.vehicles.length >= list.total;
    } catch (error) {
      if (controller.signal.aborted || token !== listToken) return;
      replace(tbody);
      replace(message, problemBox(error));
      pageInfo.textContent = '';
    } finally {
      if (token === listToken) table.removeAttribute('aria-busy');
    }
  }

  function setFilter(change: Partial<typeof filters>) {
    // The counts are of the vehicles of the type and group chosen.
    const countsChanged = (change.type !== undefined && change.type !== filters.type) || (change.groupId !== undefined && change.groupId !== filters.groupId);
    Object.assign(filters, { offset: 0 }, change);
    statusSelect.value = filters.status;
    typeSelect.value = filters.type;
    groupSelect.value = filters.groupId;
    for (const button of countsBox.querySelectorAll<HTMLButtonElement>('button.count')) {
      button.setAttribute('aria-pressed', String((button.dataset.status === 'all' ? '' : button.dataset.status) === filters.status));
    }
    void loadList();
    if (countsChanged) void loadCounts();
  }

  statusSelect.addEventListener('change', () => setFilter({ status: statusSelect.value }));
  typeSelect.addEventListener('change', () => setFilter({ type: typeSelect.value }));
  groupSelect.addEventListener('change', () => setFilter({ groupId: groupSelect.value }));
  sizeSelect.addEventListener('change', () => setFilter({ limit: Number(sizeSelect.value) }));
  filterForm.addEventListener('submit', (event) => event.preventDefault());
  prev.addEventListener('click', () => {
    filters.offset = Math.max(0, filters.offset - filters.limit);
    void loadList();
  });
  next.addEventListener('click', () => {
    filters.offset += filters.limit;
    void loadList();
  });

  // Everything the stream already told us (the snapshot included) goes on the map at once.
  for (const [id, entry] of known) {
    if (entry.lat !== undefined && entry.lng !== undefined) map.setVehicle(id, { lat: entry.lat, lng: entry.lng }, entry.status, entry.heading);
  }

  let countsTimer: number | undefined;
  const unsubscribe = ctx.live.onMessage((msg) => {
    const entry = known.get(msg.vehicleId);
    const row = rows.get(msg.vehicleId);
    if (msg.type === 'status') {
      map.setStatus(msg.vehicleId, msg.data.to);
      if (row !== undefined) replace(row.status, badge(msg.data.to));
      // A status change moves a vehicle between counts, and in or out of a list filtered by
      // status; a burst of them costs one reload.
      window.clearTimeout(countsTimer);
      countsTimer = window.setTimeout(() => {
        void loadCounts();
        if (filters.status !== '') void loadList();
      }, 300);
      return;
    }
    if (entry?.lat !== undefined && entry.lng !== undefined) {
      map.setVehicle(msg.vehicleId, { lat: entry.lat, lng: entry.lng }, entry.status, entry.heading);
    }
    if (row === undefined) return;
    if (msg.data.battery !== undefined) {
      row.battery.textContent = formatBattery(msg.data.battery);
      flash(row.battery);
    }
    if (msg.data.location !== undefined) row.position.textContent = positionText(msg.data.location.lat, msg.data.location.lng);
    row.lastUpdate.textContent = formatTime(entry?.lastUpdate ?? msg.timestamp);
    flash(row.lastUpdate);
  });

  // The list and counts wait for the groups: the rows name them, and a remembered group filter
  // that no longer exists is let go before anything is read with it.
  void loadGroups().then(() => {
    void loadCounts();
    void loadList();
  });

  return () => {
    controller.abort();
    unsubscribe();
    window.clearTimeout(countsTimer);
    map.destroy();
  };
}

const flashedAt = new WeakMap<HTMLElement, number>();

/**
 * A brief highlight of a changed cell, without forcing a layout, and at most every 5 s per cell:
 * in a busy fleet every row changes every second, and cells that never stop blinking say nothing
 * while keeping the page repainting.
 */
function flash(el: HTMLElement) {
  el.classList.add('updated');
  const now = performance.now();
  if (now - (flashedAt.get(el) ?? -Infinity) < 5000) return;
  flashedAt.set(el, now);
  el.animate([{ backgroundColor: '#fff8c5' }, { backgroundColor: 'transparent' }], { duration: 1200, easing: 'ease-out' });
}
