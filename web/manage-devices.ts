// Devices: trackers and phone apps that send telemetry for a vehicle in their own protocol
// (OsmAnd over HTTP, Teltonika over TCP). Register one, list them, delete one. docs/API.md
// "Devices and protocols".
import { api, encode, type VehicleList, type Device } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { confirmButton, field, fillTable, onSubmit, panelHeader, select, uid } from './forms.ts';
import { PROTOCOLS } from './lists.ts';

const PROTOCOL_TEXT: Record<string, string> = {
  osmand: 'OsmAnd / Traccar Client (HTTP)',
  teltonika: 'Teltonika (TCP, Codec 8)',
};


const PAGE = 100;

export function renderManageDevices(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const protocol = select(PROTOCOLS, { labels: PROTOCOL_TEXT });
  const identifier = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const vehiclesList = h('datalist', { id: uid('vehicle-ids') });
  const vehicleId = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', list: vehiclesList.id });
  const identifierField = field(identifier, { label: 'Identifier', path: '/identifier', help: ' ' });
  const help = identifierField.querySelector('.help') as HTMLElement;
  const describe = () => {
    help.textContent = protocol.value === 'teltonika'
      ? 'The tracker\'s 15-digit IMEI.'
      : 'The app\'s device id (Traccar Client: "Device identifier"), 1 to 64 characters of A–Z a–z 0–9 . _ : -';
  };
  protocol.addEventListener('change', describe);
  describe();
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const form = h('form', { class: 'card form', 'aria-labelledby': 'new-device-title', novalidate: true },
    h('h2', { id: 'new-device-title' }, 'Register a device'),
    field(protocol, { label: 'Protocol', path: '/protocol' }),
    identifierField,
    field(vehicleId, { label: 'Vehicle id', path: '/vehicleId', help: 'The vehicle whose telemetry the device sends.' }),
    vehiclesList,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Register device')),
    feedback);

  const filter = h('input', { type: 'search', id: uid('device-filter'), autocomplete: 'off', spellcheck: 'false' });
  const filterForm = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter devices' },
    h('label', { for: filter.id }, 'Vehicle '), filter, h('button', { type: 'submit' }, 'Filter'));
  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table', 'aria-label': 'Devices' },
    h('thead', {}, h('tr', {}, ...['Identifier', 'Protocol', 'Vehicle', 'Registered', 'Last seen', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
    tbody);

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'devices-title' },
    ...panelHeader('Devices', 'devices-title',
      'Trackers and apps that send a vehicle\'s telemetry in their own protocol. An identifier can belong to one device per protocol across the whole service.'),
    h('div', { class: 'manage-layout' },
      h('div', { class: 'manage-forms' }, form),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Registered devices'), filterForm, listFeedback, listState, h('div', { class: 'table-wrap' }, table)))));

  onSubmit(form, feedback, async () => {
    const created = await api<Device>('POST', '/v2/devices', {
      body: { protocol: protocol.value, identifier: identifier.value.trim(), vehicleId: vehicleId.value.trim() },
    });
    identifier.value = '';
    void loadList();
    return `Registered ${created.identifier} for ${created.vehicleId}.`;
  });

  function loadList() {
    const vehicle = filter.value.trim();
    return fillTable(table, listState, signal, async () => {
      const list = await api<{ devices: Device[]; total: number }>('GET', '/v2/devices', {
        query: { limit: PAGE, vehicleId: vehicle === '' ? undefined : vehicle }, signal,
      });
      return { items: list.devices, total: list.total };
    }, rowOf, { empty: vehicle === '' ? 'No devices yet.' : `No devices for ${vehicle}.`, noun: 'devices' });
  }

  function rowOf(device: Device): HTMLTableRowElement {
    const remove = confirmButton('Delete', listFeedback, async () => {
      await api('DELETE', `/v2/devices/${encode(device.id)}`);
      void loadList();
      return `Deleted the device ${device.identifier}.`;
    });
    return h('tr', { 'data-device-id': device.id },
      h('th', { scope: 'row' }, h('code', {}, device.identifier)),
      h('td', {}, PROTOCOL_TEXT[device.protocol] ?? device.protocol),
      h('td', {}, h('a', { href: `#/vehicles/${encode(device.vehicleId)}` }, device.vehicleId)),
      h('td', {}, formatTime(device.createdAt)),
      h('td', {}, device.lastSeenAt === null ? 'never' : formatTime(device.lastSeenAt)),
      h('td', { class: 'actions' }, remove));
  }

  // Suggestions for the vehicle field: the first page of the fleet.
  void api<VehicleList>('GET', '/v2/fleet/vehicles', { query: { limit: 1000 }, signal })
    .then((list) => replace(vehiclesList, ...list.vehicles.map((v) => h('option', { value: v.id }))))
    .catch(() => undefined);

  filterForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void loadList();
  });
  void loadList();
  return () => controller.abort();
}
