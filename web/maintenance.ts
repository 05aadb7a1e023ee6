// Maintenance: what is overdue or due soon across the fleet, recording a service (which restarts
// its schedule's intervals), and the service schedules themselves. docs/API.md "Maintenance".
import {
  api, encode, offers, type FleetMaintenance, type MaintenanceSchedule, type MaintenanceScheduleList, type ServiceRecord, type VehicleGroupList,
  type VehicleMaintenance,
} from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { confirmButton, field, fillTable, listOf, numberOf, onSubmit, panelHeader, problemBox, select, uid } from './forms.ts';

type Item = FleetMaintenance['items'][number];
type NextDue = Item['nextDue'];
const STATES = ['overdue', 'due_soon', 'ok'] as const;
const STATE_TEXT: Record<string, string> = { overdue: 'overdue', due_soon: 'due soon', ok: 'ok' };

/** A state as a badge. */
export function maintenanceBadge(state: string): HTMLElement {
  return h('span', { class: `badge maintenance-${state}` }, STATE_TEXT[state] ?? state);
}

const number = (value: number) => value.toLocaleString('en', { maximumFractionDigits: 1 });

/** The next due values as text: "at 15,000 km · 500 h · on <date>". */
export function nextDueText(due: NextDue): string {
  const parts: string[] = [];
  if (due.odometerKm !== undefined) parts.push(`${number(due.odometerKm)} km`);
  if (due.engineHours !== undefined) parts.push(`${number(due.engineHours)} h`);
  if (due.at !== undefined) parts.push(formatTime(due.at));
  return parts.join(' · ');
}

function intervalText(i: { km?: number; engineHours?: number; days?: number }): string {
  const parts: string[] = [];
  if (i.km !== undefined) parts.push(`${number(i.km)} km`);
  if (i.engineHours !== undefined) parts.push(`${number(i.engineHours)} h`);
  if (i.days !== undefined) parts.push(`${number(i.days)} days`);
  return parts.length === 0 ? '—' : parts.join(', ');
}

/** An interval from three inputs: the members given (NaN kept, so the server names the problem). */
function intervalOf(km: HTMLInputElement, hours: HTMLInputElement, days: HTMLInputElement) {
  const out: { km?: number; engineHours?: number; days?: number } = {};
  const [k, e, d] = [numberOf(km), numberOf(hours), numberOf(days)];
  if (k !== undefined) out.km = k;
  if (e !== undefined) out.engineHours = e;
  if (d !== undefined) out.days = d;
  return out;
}

const numberInput = () => h('input', { type: 'number', min: 0, step: 'any', inputmode: 'decimal' });

/** `datetime-local` text of now, in the browser's zone. */
function localNow(): string {
  const now = new Date();
  return new Date(now.getTime() - now.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

export function renderMaintenance(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const writable = offers('fleet:write');

  // Record a service.
  const vehicle = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const scheduleSelect = h('select', {}, h('option', { value: '' }, 'None (a service of its own)'));
  const performed = h('input', { type: 'datetime-local', value: localNow() });
  const serviceKm = numberInput();
  const serviceHours = numberInput();
  const notes = h('input', { type: 'text', autocomplete: 'off' });
  const serviceFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const serviceForm = h('form', { class: 'card form', 'aria-labelledby': 'service-title', novalidate: true },
    h('h2', { id: 'service-title' }, 'Record a service'),
    field(vehicle, { label: 'Vehicle', path: '/vehicleId' }),
    field(scheduleSelect, { label: 'Schedule', path: '/scheduleId', help: 'A service for a schedule restarts its intervals.' }),
    field(performed, { label: 'Done at', path: '/performedAt' }),
    field(serviceKm, { label: 'Odometer (km, optional)', path: '/odometerKm', help: 'Left empty: the vehicle\'s meters now.' }),
    field(serviceHours, { label: 'Engine hours (optional)', path: '/engineHours' }),
    field(notes, { label: 'Notes (optional)', path: '/notes' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Record service')),
    serviceFeedback);

  // Add a schedule.
  const name = h('input', { type: 'text', autocomplete: 'off' });
  const [everyKm, everyHours, everyDays] = [numberInput(), numberInput(), numberInput()];
  const [soonKm, soonHours, soonDays] = [numberInput(), numberInput(), numberInput()];
  const target = select(['all', 'vehicles', 'group'], { labels: { all: 'Every vehicle', vehicles: 'These vehicles', group: 'A group' } });
  const vehicleIds = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'van-1, van-2' });
  const groupSelect = h('select', {});
  const scheduleFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const scheduleForm = h('form', { class: 'card form', 'aria-labelledby': 'schedule-title', novalidate: true },
    h('h2', { id: 'schedule-title' }, 'Add a schedule'),
    field(name, { label: 'Name', path: '/name' }),
    h('fieldset', {}, h('legend', {}, 'Every (at least one; whichever comes first)'),
      field(everyKm, { label: 'km', path: '/every/km' }), field(everyHours, { label: 'Engine hours', path: '/every/engineHours' }),
      field(everyDays, { label: 'Days', path: '/every/days' })),
    h('fieldset', {}, h('legend', {}, 'Due soon within (optional)'),
      field(soonKm, { label: 'km', path: '/dueSoon/km' }), field(soonHours, { label: 'Engine hours', path: '/dueSoon/engineHours' }),
      field(soonDays, { label: 'Days', path: '/dueSoon/days' })),
    field(target, { label: 'Applies to' }),
    field(vehicleIds, { label: 'Vehicles', path: '/vehicleIds', help: 'Comma-separated, when it applies to these vehicles.' }),
    field(groupSelect, { label: 'Group', path: '/groupId' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Add schedule')),
    scheduleFeedback);

  const stateFilter = select(STATES, { id: uid('maintenance-state'), placeholder: 'Every state', labels: STATE_TEXT });
  const itemsState = h('div', { class: 'feedback' });
  const itemsTable = h('table', { class: 'manage-table', 'aria-label': 'Service items' },
    h('thead', {}, h('tr', {}, ...['Vehicle', 'Schedule', 'State', 'Next due', 'Last service', ''].map((t) => h('th', { scope: 'col' }, t)))), h('tbody'));
  const schedulesState = h('div', { class: 'feedback' });
  const schedulesFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const schedulesTable = h('table', { class: 'manage-table', 'aria-label': 'Schedules' },
    h('thead', {}, h('tr', {}, ...['Name', 'Applies to', 'Every', 'Due soon within', ''].map((t) => h('th', { scope: 'col' }, t)))), h('tbody'));

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'maintenance-title' },
    ...panelHeader('Maintenance', 'maintenance-title',
      'Service schedules by distance, engine hours and days, and where each vehicle stands with them. A service recorded for a schedule restarts its intervals.'),
    h('div', { class: 'manage-layout' },
      writable ? h('div', { class: 'manage-forms' }, serviceForm, scheduleForm) : null,
      h('div', { class: 'manage-list' },
        h('h2', {}, 'Due and overdue'),
        h('div', { class: 'filters' }, h('label', { for: stateFilter.id }, 'State '), stateFilter),
        itemsState, h('div', { class: 'table-wrap' }, itemsTable),
        h('h2', {}, 'Schedules'), schedulesFeedback, schedulesState, h('div', { class: 'table-wrap' }, schedulesTable)))));

  let schedules: MaintenanceSchedule[] = [];

  function loadItems() {
    return fillTable(itemsTable, itemsState, signal, async () => {
      const state = stateFilter.value === '' ? undefined : stateFilter.value;
      const list = await api<FleetMaintenance>('GET', '/v2/maintenance', { query: { limit: 500, state }, signal });
      return { items: list.items, total: list.total };
    }, itemRow, { empty: schedules.length === 0 ? 'No schedules yet: add one.' : 'No service items in this state.', noun: 'items' });
  }

  function itemRow(item: Item): HTMLElement {
    const record = writable ? h('button', { type: 'button' }, 'Record service') : null;
    record?.addEventListener('click', () => {
      vehicle.value = item.vehicleId;
      scheduleSelect.value = item.scheduleId;
      performed.value = localNow();
      vehicle.focus();
    });
    return h('tr', { 'data-item': `${item.vehicleId} ${item.scheduleId}` },
      h('th', { scope: 'row' }, h('a', { href: `#/vehicles/${encode(item.vehicleId)}` }, item.vehicleId)),
      h('td', {}, item.name),
      h('td', {}, maintenanceBadge(item.state)),
      h('td', {}, nextDueText(item.nextDue)),
      h('td', {}, item.lastService === null ? '—' : formatTime(item.lastService.performedAt)),
      h('td', { class: 'actions' }, record));
  }

  function loadSchedules() {
    return fillTable(schedulesTable, schedulesState, signal, async () => {
      const list = await api<MaintenanceScheduleList>('GET', '/v2/maintenance-schedules', { query: { limit: 1000 }, signal });
      schedules = list.schedules;
      replace(scheduleSelect, h('option', { value: '' }, 'None (a service of its own)'), ...schedules.map((s) => h('option', { value: s.id }, s.name)));
      return { items: list.schedules, total: list.total };
    }, scheduleRow, { empty: 'No schedules yet.', noun: 'schedules' });
  }

  function scheduleRow(s: MaintenanceSchedule): HTMLElement {
    const remove = writable ? confirmButton('Delete', schedulesFeedback, async () => {
      await api('DELETE', `/v2/maintenance-schedules/${encode(s.id)}`);
      void refresh();
      return `Deleted ${s.name}.`;
    }) : null;
    const applies = s.vehicleIds !== null ? s.vehicleIds.join(', ') : s.groupId !== null ? `group ${s.groupId}` : 'every vehicle';
    return h('tr', { 'data-schedule-id': s.id },
      h('th', { scope: 'row' }, s.name), h('td', {}, applies), h('td', {}, intervalText(s.every)), h('td', {}, intervalText(s.dueSoon)),
      h('td', { class: 'actions' }, remove));
  }

  async function refresh() {
    await loadSchedules();
    await loadItems();
  }

  onSubmit(serviceForm, serviceFeedback, async () => {
    const body: Record<string, unknown> = { performedAt: performed.value === '' ? '' : new Date(performed.value).toISOString() };
    if (scheduleSelect.value !== '') body.scheduleId = scheduleSelect.value;
    const km = numberOf(serviceKm);
    const hours = numberOf(serviceHours);
    if (km !== undefined) body.odometerKm = km;
    if (hours !== undefined) body.engineHours = hours;
    if (notes.value.trim() !== '') body.notes = notes.value.trim();
    const made = await api<ServiceRecord>('POST', `/v2/fleet/vehicles/${encode(vehicle.value.trim())}/service-records`, { body });
    serviceKm.value = '';
    serviceHours.value = '';
    notes.value = '';
    void loadItems();
    return `Recorded a service of ${made.vehicleId} at ${number(made.odometerKm)} km.`;
  });

  onSubmit(scheduleForm, scheduleFeedback, async () => {
    const dueSoon = intervalOf(soonKm, soonHours, soonDays);
    const body: Record<string, unknown> = { name: name.value.trim(), every: intervalOf(everyKm, everyHours, everyDays), dueSoon };
    if (target.value === 'vehicles') body.vehicleIds = listOf(vehicleIds.value);
    if (target.value === 'group') body.groupId = groupSelect.value;
    const made = await api<MaintenanceSchedule>('POST', '/v2/maintenance-schedules', { body });
    for (const input of [name, everyKm, everyHours, everyDays, soonKm, soonHours, soonDays, vehicleIds]) input.value = '';
    void refresh();
    return `Added ${made.name}.`;
  });

  stateFilter.addEventListener('change', () => void loadItems());
  if (writable) {
    void api<VehicleGroupList>('GET', '/v2/groups', { query: { limit: 1000 }, signal })
      .then((list) => replace(groupSelect, ...list.groups.map((g) => h('option', { value: g.id }, g.name))))
      .catch(() => undefined);
  }
  void refresh();
  return () => controller.abort();
}

/** A vehicle's service items, for its page. */
export function renderVehicleMaintenance(root: HTMLElement, vehicleId: string, signal: AbortSignal): void {
  replace(root, h('p', { class: 'loading', role: 'status' }, 'Loading maintenance…'));
  void api<VehicleMaintenance>('GET', `/v2/fleet/vehicles/${encode(vehicleId)}/maintenance`, { signal }).then((m) => {
    if (m.items.length === 0) {
      replace(root, h('p', { class: 'muted' }, 'No service schedule applies to this vehicle.'), h('p', {}, h('a', { href: '#/maintenance' }, 'Maintenance')));
      return;
    }
    replace(root, h('table', { class: 'history', 'aria-label': 'Service items' },
      h('thead', {}, h('tr', {}, ...['Schedule', 'State', 'Next due', 'Last service'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...m.items.map((i) => h('tr', {},
        h('th', { scope: 'row' }, i.name), h('td', {}, maintenanceBadge(i.state)), h('td', {}, nextDueText(i.nextDue)),
        h('td', {}, i.lastService === null ? '—' : formatTime(i.lastService.performedAt)))))));
  }).catch((error: unknown) => {
    if (!signal.aborted) replace(root, problemBox(error));
  });
}
