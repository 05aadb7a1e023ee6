// Drivers: the people who drive the fleet, the identifiers (iButton, RFID) they sign in to a vehicle
// with, and who drives what. Add a driver, find one, assign one to a vehicle or end the assignment,
// read a driver's assignments, delete one. docs/API.md "Drivers".
import { api, encode, type Driver, type DriverAssignment, type DriverAssignmentList, type DriverList, type VehicleList } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { act, confirmButton, field, fillTable, onSubmit, panelHeader, problemBox, select, uid } from './forms.ts';

const PAGE = 100;
const KINDS = ['ibutton', 'rfid'] as const;
const KIND_TEXT: Record<string, string> = { ibutton: 'iButton (16 hex digits)', rfid: 'RFID card' };

export function renderDrivers(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;

  const name = h('input', { type: 'text', autocomplete: 'off' });
  const externalId = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const kind = select(KINDS, { labels: KIND_TEXT });
  const value = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const form = h('form', { class: 'card form', 'aria-labelledby': 'new-driver-title', novalidate: true },
    h('h2', { id: 'new-driver-title' }, 'Add a driver'),
    field(name, { label: 'Name', path: '/name' }),
    field(externalId, { label: 'External id (optional)', path: '/externalId', help: 'The driver\'s id in payroll or HR.' }),
    field(kind, { label: 'Identifier kind', path: '/identifiers/0/kind' }),
    field(value, { label: 'Identifier (optional)', path: '/identifiers/0/value', help: 'What the vehicle\'s reader reports when the driver signs in.' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Add driver')),
    feedback);

  const search = h('input', { type: 'search', id: uid('driver-search'), autocomplete: 'off', spellcheck: 'false' });
  const searchForm = h('form', { class: 'filters', role: 'search', 'aria-label': 'Find drivers' },
    h('label', { for: search.id }, 'Name or external id '), search, h('button', { type: 'submit' }, 'Find'));
  const vehiclesList = h('datalist', { id: uid('vehicle-ids') });
  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const listState = h('div', { class: 'feedback' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table', 'aria-label': 'Drivers' },
    h('thead', {}, h('tr', {}, ...['Name', 'External id', 'Identifiers', 'Driving', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
    tbody);
  const history = h('section', { class: 'driver-history', 'aria-live': 'polite' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'drivers-title' },
    ...panelHeader('Drivers', 'drivers-title',
      'The people who drive the fleet. A driver drives one vehicle at a time and a vehicle has one driver: assigning ends what was there before.'),
    h('div', { class: 'manage-layout' },
      h('div', { class: 'manage-forms' }, form),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Drivers'), searchForm, listFeedback, listState, vehiclesList,
        h('div', { class: 'table-wrap' }, table), history))));

  onSubmit(form, feedback, async () => {
    const identifier = value.value.trim();
    const created = await api<Driver>('POST', '/v2/drivers', {
      body: {
        name: name.value.trim(),
        ...(externalId.value.trim() === '' ? {} : { externalId: externalId.value.trim() }),
        ...(identifier === '' ? {} : { identifiers: [{ kind: kind.value, value: identifier }] }),
      },
    });
    name.value = '';
    externalId.value = '';
    value.value = '';
    void loadList();
    return `Added ${created.name}.`;
  });

  function loadList() {
    const q = search.value.trim();
    return fillTable(table, listState, signal, async () => {
      const list = await api<DriverList>('GET', '/v2/drivers', { query: { limit: PAGE, q: q === '' ? undefined : q }, signal });
      return { items: list.drivers, total: list.total };
    }, rowOf, { empty: q === '' ? 'No drivers yet.' : `No driver matches "${q}".`, noun: 'drivers' });
  }

  function rowOf(driver: Driver): HTMLTableRowElement {
    const vehicle = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', list: vehiclesList.id, 'aria-label': `Vehicle for ${driver.name}`, size: 10 });
    const assign = h('button', { type: 'button' }, 'Assign');
    assign.addEventListener('click', () => void act(assign, listFeedback, async () => {
      const made = await api<DriverAssignment>('POST', '/v2/driver-assignments', { body: { driverId: driver.id, vehicleId: vehicle.value.trim() } });
      void loadList();
      return `${driver.name} drives ${made.vehicleId} from ${formatTime(made.startedAt)}.`;
    }));
    const driving: Array<HTMLElement | string> = driver.vehicleId === null ? ['—'] : [h('a', { href: `#/vehicles/${encode(driver.vehicleId)}` }, driver.vehicleId)];
    const end = driver.vehicleId === null ? null : h('button', { type: 'button' }, 'End');
    end?.addEventListener('click', () => void act(end, listFeedback, async () => {
      const ongoing = await api<DriverAssignmentList>('GET', '/v2/driver-assignments', { query: { driverId: driver.id, limit: 1 } });
      const current = ongoing.assignments.find((a) => a.endedAt === null);
      if (current !== undefined) await api('POST', `/v2/driver-assignments/${encode(current.id)}/end`, { body: {} });
      void loadList();
      return `${driver.name} no longer drives ${driver.vehicleId}.`;
    }));
    const show = h('button', { type: 'button' }, 'Assignments');
    show.addEventListener('click', () => void showHistory(driver));
    const remove = confirmButton('Delete', listFeedback, async () => {
      await api('DELETE', `/v2/drivers/${encode(driver.id)}`);
      void loadList();
      return `Deleted ${driver.name}; their assignments stay on record.`;
    });
    return h('tr', { 'data-driver-id': driver.id },
      h('th', { scope: 'row' }, driver.name),
      h('td', {}, driver.externalId ?? '—'),
      h('td', {}, driver.identifiers.length === 0 ? '—' : h('code', {}, driver.identifiers.map((i) => i.value).join(', '))),
      h('td', { class: 'driving' }, ...driving),
      h('td', { class: 'actions' }, vehicle, assign, end, show, remove));
  }

  async function showHistory(driver: Driver) {
    replace(history, h('h2', {}, `${driver.name}: assignments`), h('p', { class: 'loading', role: 'status' }, 'Loading…'));
    try {
      const list = await api<DriverAssignmentList>('GET', '/v2/driver-assignments', { query: { driverId: driver.id, limit: 50 }, signal });
      const rows = list.assignments.map((a) => h('tr', {},
        h('td', {}, h('a', { href: `#/vehicles/${encode(a.vehicleId)}` }, a.vehicleId)),
        h('td', {}, formatTime(a.startedAt)),
        h('td', {}, a.endedAt === null ? 'ongoing' : formatTime(a.endedAt)),
        h('td', {}, a.source === 'device' ? 'the vehicle\'s reader' : 'assigned')));
      replace(history, h('h2', {}, `${driver.name}: assignments`),
        rows.length === 0 ? h('p', { class: 'empty' }, 'Never assigned.')
          : h('table', { class: 'manage-table', 'aria-label': `Assignments of ${driver.name}` },
            h('thead', {}, h('tr', {}, ...['Vehicle', 'From', 'To', 'How'].map((t) => h('th', { scope: 'col' }, t)))),
            h('tbody', {}, ...rows)));
    } catch (error) {
      if (signal.aborted) return;
      replace(history, problemBox(error));
    }
  }

  // Suggestions for the vehicle fields: the first page of the fleet.
  void api<VehicleList>('GET', '/v2/fleet/vehicles', { query: { limit: 1000 }, signal })
    .then((list) => replace(vehiclesList, ...list.vehicles.map((v) => h('option', { value: v.id }))))
    .catch(() => undefined);

  searchForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void loadList();
  });
  void loadList();
  return () => controller.abort();
}
