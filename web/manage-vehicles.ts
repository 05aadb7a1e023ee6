// Vehicles: register, edit (an RFC 7396 merge patch of what changed), change status, delete; the
// groups a vehicle is in shown by name and chosen when registering or editing it. A person limited
// to groups is offered only theirs (the only ones the service shows them) and registers a vehicle
// into at least one of them. docs/API.md "Vehicles", "Status and transitions", "Vehicle groups",
// "Scoped credentials".
import { api, ApiError, encode, limitedToGroups, type VehicleDetails, type VehicleList, type VehicleListItem } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { confirmButton, field, listOf, loading, numberOf, onSubmit, panelHeader, problemBox, select } from './forms.ts';
import { type Group, groupNames, groupPicker, groupsUnreadable, readGroups } from './groups.ts';
import { nextStatuses, TYPES } from './transitions.ts';

interface Vehicle extends VehicleDetails {
  name: string | null;
}

type Row = VehicleListItem & { name?: string | null };

const PAGE = 25;
const LEVELS = ['0', '1', '2', '3', '4', '5'];
/** Said where groups would be chosen when they cannot be read. */
const UNREADABLE = 'Groups cannot be chosen here now; a vehicle\'s groups stay as they are.';
/** The hint of the group choice of a person limited to groups. */
const LIMITED_HELP = 'Your account is limited to these groups: a vehicle you register goes in at least one of them, and you see it while it is in one.';

function statusBadge(status: string): HTMLElement {
  return h('span', { class: `badge status-${status}` }, status);
}

export function renderManageVehicles(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;

  // Register.
  const idInput = h('input', { type: 'text', name: 'vehicleId', required: true, autocomplete: 'off', spellcheck: 'false' });
  const typeSelect = select(TYPES);
  const nameInput = h('input', { type: 'text', name: 'name', autocomplete: 'off' });
  const sensorsInput = h('input', { type: 'text', name: 'sensors', autocomplete: 'off', spellcheck: 'false' });
  const capacityInput = h('input', { type: 'number', name: 'capacity', min: 0, step: 1 });
  const levelSelect = select(LEVELS, { placeholder: 'not set' });
  /** Where the register form's group choice goes once the groups are read. */
  const registerGroups = h('div', {}, loading('Reading the groups…'));
  let registerPicker: ReturnType<typeof groupPicker> | undefined;
  const registerFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const limited = limitedToGroups();
  const registerForm = h('form', { class: 'card form', 'aria-labelledby': 'register-title', novalidate: true },
    h('h2', { id: 'register-title' }, 'Register a vehicle'),
    field(idInput, { label: 'Vehicle id', path: '/vehicleId', help: '1 to 64 characters of A–Z a–z 0–9 . _ : -' }),
    field(typeSelect, { label: 'Type', path: '/type' }),
    field(nameInput, { label: 'Name (optional)', path: '/name' }),
    field(sensorsInput, { label: 'Sensors (optional)', path: '/configuration/sensors', help: 'Comma-separated, e.g. gps, lidar' }),
    field(capacityInput, { label: 'Capacity (optional)', path: '/configuration/capacity' }),
    field(levelSelect, { label: 'Autonomy level (optional)', path: '/configuration/autonomyLevel' }),
    registerGroups,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Register')),
    registerFeedback);

  const editor = h('div', { class: 'editor' });
  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table', 'aria-label': 'Registered vehicles' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Vehicle'), h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Type'),
      h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Groups'), h('th', { scope: 'col' }, 'Actions'))),
    tbody);
  const prev = h('button', { type: 'button' }, '← Previous');
  const next = h('button', { type: 'button' }, 'Next →');
  const pageInfo = h('span', { class: 'page-info', 'aria-live': 'polite' });
  let offset = 0;

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'manage-vehicles-title' },
    ...panelHeader('Vehicles', 'manage-vehicles-title', 'Register vehicles, change their name, type and configuration or status, and delete them.'),
    h('div', { class: 'manage-layout' },
      h('div', { class: 'manage-forms' }, registerForm, editor),
      h('div', { class: 'manage-list' },
        h('h2', {}, 'Registered vehicles'), listFeedback, listState,
        h('div', { class: 'table-wrap' }, table),
        h('nav', { class: 'pager', 'aria-label': 'Vehicle pages' }, prev, pageInfo, next)))));

  onSubmit(registerForm, registerFeedback, async () => {
    const configuration: Record<string, unknown> = {};
    const sensors = listOf(sensorsInput.value);
    if (sensors.length > 0) configuration.sensors = sensors;
    const capacity = numberOf(capacityInput);
    if (capacity !== undefined) configuration.capacity = capacity;
    if (levelSelect.value !== '') configuration.autonomyLevel = Number(levelSelect.value);
    const body: Record<string, unknown> = { vehicleId: idInput.value.trim(), type: typeSelect.value };
    if (nameInput.value.trim() !== '') body.name = nameInput.value.trim();
    if (Object.keys(configuration).length > 0) body.configuration = configuration;
    const groupIds = registerPicker?.value() ?? [];
    if (groupIds.length > 0) body.groupIds = groupIds;
    // Without a choice the service would put it in all of them: the person says which. (Groups that could not be read: the service decides.)
    else if (limited && registerPicker !== undefined) {
      throw new ApiError(400, 'Choose a group', 'Your account is limited to groups: choose at least one of them for the vehicle.', 'validation-failed', [
        { in: 'body', path: '/groupIds', message: 'choose at least one of your groups' },
      ]);
    }
    const created = await api<Vehicle>('POST', '/v2/fleet/vehicles', { body });
    registerForm.reset();
    void loadList();
    return `Registered ${created.id}.`;
  });

  /** The organization's groups, for their names and to choose from; undefined until read, or when they could not be. */
  let groups: Group[] | undefined;
  let groupsById = new Map<string, Group>();
  /** Why the groups could not be read, said where they would be chosen. */
  let groupsProblem: unknown;

  async function loadGroups() {
    try {
      groups = await readGroups(signal);
      groupsById = new Map(groups.map((g) => [g.id, g]));
      registerPicker = groupPicker(groups, [], limited ? { help: LIMITED_HELP } : {});
      replace(registerGroups, registerPicker.element);
    } catch (error) {
      if (signal.aborted) return;
      groupsProblem = error;
      replace(registerGroups, groupsUnreadable(error, UNREADABLE));
    }
  }

  async function loadList() {
    table.setAttribute('aria-busy', 'true');
    try {
      const list = await api<VehicleList>('GET', '/v2/fleet/vehicles', { query: { limit: PAGE, offset }, signal });
      replace(listState);
      replace(tbody, ...list.vehicles.map((v) => rowOf(v)));
      if (list.vehicles.length === 0) replace(listState, h('p', { class: 'empty' }, list.total === 0 ? 'No vehicles yet.' : 'No vehicles on this page.'));
      const first = list.vehicles.length === 0 ? 0 : list.offset + 1;
      pageInfo.textContent = `${first}–${list.offset + list.vehicles.length} of ${list.total}`;
      prev.disabled = list.offset === 0;
      next.disabled = list.offset + list.vehicles.length >= list.total;
    } catch (error) {
      if (signal.aborted) return;
      replace(listState, problemBox(error));
    } finally {
      table.removeAttribute('aria-busy');
    }
  }

  function rowOf(v: Row): HTMLTableRowElement {
    const edit = h('button', { type: 'button' }, 'Edit');
    edit.addEventListener('click', () => void openEditor(v.id));
    const remove = confirmButton('Delete', listFeedback, async () => {
      await api('DELETE', `/v2/fleet/vehicles/${encode(v.id)}`);
      if (editor.dataset.vehicleId === v.id) closeEditor();
      void loadList();
      return `Deleted ${v.id}.`;
    });
    return h('tr', { 'data-vehicle-id': v.id },
      h('th', { scope: 'row' }, h('a', { href: `#/vehicles/${encode(v.id)}` }, v.id)),
      h('td', {}, v.name ?? '—'), h('td', {}, v.type), h('td', {}, statusBadge(v.status)),
      h('td', { class: 'cell-groups' }, groupNames(v.groupIds, groupsById)),
      h('td', { class: 'actions' }, edit, remove));
  }

  function closeEditor() {
    delete editor.dataset.vehicleId;
    replace(editor);
  }

  async function openEditor(id: string) {
    editor.dataset.vehicleId = id;
    replace(editor, h('div', { class: 'card' }, loading(`Loading ${id}…`)));
    try {
      const vehicle = await api<Vehicle>('GET', `/v2/fleet/vehicles/${encode(id)}`, { signal });
      if (editor.dataset.vehicleId === id) showEditor(vehicle);
    } catch (error) {
      if (signal.aborted) return;
      replace(editor, h('div', { class: 'card' }, problemBox(error)));
    }
  }

  function showEditor(vehicle: Vehicle) {
    let current = vehicle;
    const titleId = `edit-title-${vehicle.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const type = select(TYPES);
    const name = h('input', { type: 'text', autocomplete: 'off' });
    const sensors = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
    const capacity = h('input', { type: 'number', min: 0, step: 1 });
    const level = select(LEVELS, { placeholder: 'not set' });
    const picker = groups === undefined ? undefined
      : groupPicker(groups, current.groupIds, limited ? { help: 'Your account is limited to these groups: the vehicle stays in your view while it is in one of them.' } : {});
    const fill = (v: Vehicle) => {
      type.value = v.type;
      name.value = v.name ?? '';
      sensors.value = (v.configuration.sensors ?? []).join(', ');
      capacity.value = v.configuration.capacity === undefined ? '' : String(v.configuration.capacity);
      level.value = v.configuration.autonomyLevel === undefined ? '' : String(v.configuration.autonomyLevel);
      picker?.set(v.groupIds);
    };
    fill(current);
    const editFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const editForm = h('form', { class: 'form', 'aria-labelledby': titleId, novalidate: true },
      field(type, { label: 'Type', path: '/type' }),
      field(name, { label: 'Name', path: '/name', help: 'Empty removes the name.' }),
      field(sensors, { label: 'Sensors', path: '/configuration/sensors', help: 'Comma-separated; empty removes them.' }),
      field(capacity, { label: 'Capacity', path: '/configuration/capacity' }),
      field(level, { label: 'Autonomy level', path: '/configuration/autonomyLevel' }),
      picker === undefined ? groupsUnreadable(groupsProblem, UNREADABLE) : picker.element,
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save changes')),
      editFeedback);
    onSubmit(editForm, editFeedback, async () => {
      // Only what changed, as a merge patch: an emptied field is null, which removes it.
      const patch: Record<string, unknown> = {};
      if (type.value !== current.type) patch.type = type.value;
      const newName = name.value.trim() === '' ? null : name.value.trim();
      if (newName !== current.name) patch.name = newName;
      const config: Record<string, unknown> = {};
      const newSensors = listOf(sensors.value);
      const oldSensors = current.configuration.sensors ?? [];
      if (newSensors.join(',') !== oldSensors.join(',')) config.sensors = newSensors.length === 0 ? null : newSensors;
      const newCapacity = numberOf(capacity) ?? null;
      if (newCapacity !== (current.configuration.capacity ?? null)) config.capacity = newCapacity;
      const newLevel = level.value === '' ? null : Number(level.value);
      if (newLevel !== (current.configuration.autonomyLevel ?? null)) config.autonomyLevel = newLevel;
      if (Object.keys(config).length > 0) patch.configuration = config;
      // The whole list replaces the vehicle's: sent only when the choice differs from it.
      const newGroups = picker?.value();
      if (newGroups !== undefined && [...newGroups].sort().join() !== [...current.groupIds].sort().join()) patch.groupIds = newGroups;
      if (Object.keys(patch).length === 0) return 'Nothing to change.';
      current = await api<Vehicle>('PATCH', `/v2/fleet/vehicles/${encode(current.id)}`, { body: patch, contentType: 'application/merge-patch+json' });
      fill(current);
      replace(meta, ...metaOf(current));
      void loadList();
      return `Saved ${current.id}.`;
    });

    const statusBox = h('div');
    const meta = h('p', { class: 'muted' }, ...metaOf(current));
    const close = h('button', { type: 'button' }, 'Close');
    close.addEventListener('click', closeEditor);
    const renderStatus = () => {
      const allowed = nextStatuses(current.status);
      const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
      if (allowed.length === 0) {
        replace(statusBox, h('p', {}, 'Status ', statusBadge(current.status), ': retired vehicles keep their status.'));
        return;
      }
      const to = select(allowed);
      const reason = h('input', { type: 'text', maxlength: 500, autocomplete: 'off' });
      const form = h('form', { class: 'form status-change', 'aria-label': `Change the status of ${current.id}`, novalidate: true },
        h('p', {}, 'Status now ', statusBadge(current.status)),
        field(to, { label: 'New status', path: '/status' }),
        field(reason, { label: 'Reason (optional)', path: '/reason' }),
        h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Change status')),
        feedback);
      onSubmit(form, feedback, async () => {
        const body: Record<string, unknown> = { status: to.value };
        if (reason.value.trim() !== '') body.reason = reason.value.trim();
        current = await api<Vehicle>('PUT', `/v2/fleet/vehicles/${encode(current.id)}/status`, { body });
        replace(meta, ...metaOf(current));
        renderStatus();
        void loadList();
        const done = statusBox.querySelector('.feedback');
        if (done !== null) replace(done, h('p', { class: 'ok', role: 'status' }, `Status changed to ${current.status}.`));
      });
      replace(statusBox, form);
    };
    renderStatus();
    replace(editor, h('section', { class: 'card', 'aria-labelledby': titleId },
      h('div', { class: 'card-head' }, h('h2', { id: titleId }, `Edit ${vehicle.id}`), close),
      meta, editForm, h('h3', {}, 'Status'), statusBox));
    name.focus();
  }

  prev.addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE);
    void loadList();
  });
  next.addEventListener('click', () => {
    offset += PAGE;
    void loadList();
  });
  // The list waits for the groups, so that its rows name them.
  void loadGroups().then(loadList);
  return () => controller.abort();
}

function metaOf(v: Vehicle): Array<string | HTMLElement> {
  return [`Registered ${formatTime(v.createdAt)} · changed ${formatTime(v.updatedAt)} · `, h('a', { href: `#/vehicles/${encode(v.id)}` }, 'open its page')];
}
