// Vehicle groups: the Groups page (create, rename or describe, delete; a group's vehicles a page at
// a time, put in by id and taken out one by one; the users and API keys limited to each) and what
// the other pages share to show groups by name and to choose them (a vehicle's groups, the groups
// a user or key is limited to). Reading needs fleet:read, changing fleet:write and a credential
// not limited to groups; a person who may not change them sees the page without its controls.
// docs/API.md "Vehicle groups", "Scoped credentials".
import {
  api, ApiError, type ApiKey, encode, limitedToGroups, offers, readAll, type Scope, type User, type VehicleGroup, type VehicleGroupList, type VehicleList,
  type VehicleListItem,
} from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { act, checkboxGroup, confirmButton, field, listOf, loading, onSubmit, panelHeader, problemBox } from './forms.ts';

export type Group = VehicleGroup;
type GroupList = VehicleGroupList;

const PAGE = 25;
const MEMBERS_PAGE = 25;

/** Every group of the organization (of a credential limited to groups: its own), oldest first, read a page at a time. */
export function readGroups(signal?: AbortSignal): Promise<Group[]> {
  return readAll<Group>('/v2/groups', 'groups', signal);
}

/** A vehicle's groups in words: each by its name, or by its id when the name is not known. */
export function groupNames(ids: readonly string[] | undefined, byId: ReadonlyMap<string, Group>): string {
  if (ids === undefined || ids.length === 0) return '—';
  return ids.map((id) => byId.get(id)?.name ?? id).join(', ');
}

/**
 * The groups a user or key is limited to, in words: "Whole organization" for none, else each
 * group's name in the order of `byId` (the list's, as the group choice offers them), then the id
 * of any not known.
 */
export function limitText(ids: readonly string[] | null | undefined, byId: ReadonlyMap<string, Group>): string {
  if (ids === null || ids === undefined) return 'Whole organization';
  return groupNames([...[...byId.keys()].filter((id) => ids.includes(id)), ...ids.filter((id) => !byId.has(id))], byId);
}

/**
 * Checkboxes of the organization's groups for a form's body member `groupIds` (a vehicle's
 * groups, or those a user or key is limited to), with an optional hint. `value` answers the ids
 * to send: those checked, and any in `checked` that the list did not offer, which are kept as
 * they are.
 */
export function groupPicker(groups: readonly Group[], checked: readonly string[] = [], options: { help?: string } = {}) {
  const byId = new Map(groups.map((g) => [g.id, g]));
  if (groups.length === 0) {
    const element = h('div', { class: 'field' }, h('p', { class: 'help' }, 'No groups yet: ', h('a', { href: '#/groups' }, 'create them on the Groups page'), '.'));
    return { element, value: () => checked.filter((id) => !byId.has(id)), set: (_ids: readonly string[]) => {} };
  }
  const boxes = checkboxGroup('Groups', groups.map((g) => g.id), {
    path: '/groupIds', label: (id) => byId.get(id)?.name ?? id, className: 'group-picker', ...(options.help === undefined ? {} : { help: options.help }),
  });
  let kept = checked.filter((id) => !byId.has(id));
  boxes.set(checked);
  return {
    element: boxes.element,
    value: () => [...boxes.selected(), ...kept],
    set(ids: readonly string[]) {
      boxes.set(ids);
      kept = ids.filter((id) => !byId.has(id));
    },
  };
}

/** In place of a group choice when the groups could not be read: `note` says what happens without it, and the problem why. */
export function groupsUnreadable(error: unknown, note: string): HTMLElement {
  return h('div', { class: 'field' }, h('p', { class: 'help' }, note), error === undefined ? null : problemBox(error));
}

/**
 * Whether to offer the controls that change groups: a person's role (fleet:write) and that they
 * are not limited to groups, which the service would refuse; a key's are not known here, so a key
 * is offered them.
 */
function mayWrite(): boolean {
  return offers('fleet:write') && !limitedToGroups();
}

/**
 * Who is limited to which groups, as far as the signed-in person may read it: the users (users
 * scope) and the API keys (admin scope); undefined for a list they may not read.
 */
interface ScopedAccess {
  users: User[] | undefined;
  keys: ApiKey[] | undefined;
  /** Why a list that could have been read was not (anything but a refusal for a missing scope). */
  problem: unknown;
}

async function readScopedAccess(signal: AbortSignal): Promise<ScopedAccess> {
  let problem: unknown;
  // What the person lacks the scope for is not asked for; a key is, and its refusal taken as "not readable".
  const readable = async <T>(scope: Scope, path: string, member: string): Promise<T[] | undefined> => {
    if (!offers(scope)) return undefined;
    try {
      return await readAll<T>(path, member, signal);
    } catch (error) {
      if (signal.aborted) throw error;
      if (!(error instanceof ApiError && error.status === 403)) problem ??= error;
      return undefined;
    }
  };
  const [users, keys] = await Promise.all([readable<User>('users', '/v2/users', 'users'), readable<ApiKey>('admin', '/v2/api-keys', 'apiKeys')]);
  return { users, keys, problem };
}

/** The users and keys limited to `groupId`, each list undefined when not readable. */
function holdersOf(access: ScopedAccess, groupId: string): { users: User[] | undefined; keys: ApiKey[] | undefined } {
  return {
    users: access.users?.filter((u) => u.groupIds?.includes(groupId) === true),
    keys: access.keys?.filter((k) => k.groupIds?.includes(groupId) === true),
  };
}

/** A group's "Scoped access" cell: a line for its users and one for its keys (those readable), or "—". */
function accessCell(access: ScopedAccess, groupId: string): Array<HTMLElement | string> {
  const { users, keys } = holdersOf(access, groupId);
  const lines: HTMLElement[] = [];
  if (users !== undefined && users.length > 0) {
    lines.push(h('p', { class: 'access-line' }, h('span', { class: 'muted' }, 'Users: '), users.map((u) => u.name).join(', ')));
  }
  if (keys !== undefined && keys.length > 0) {
    lines.push(h('p', { class: 'access-line' }, h('span', { class: 'muted' }, 'API keys: '), keys.map((k) => k.name).join(', ')));
  }
  return lines.length === 0 ? ['—'] : lines;
}

/** After a 409 group-in-use: who is limited to the group, as far as the page may read it, for the person to change first. */
function holdersText(access: ScopedAccess, group: Group): HTMLElement | null {
  const { users, keys } = holdersOf(access, group.id);
  const parts: string[] = [];
  if (users !== undefined && users.length > 0) parts.push(`${users.length === 1 ? 'the user' : 'the users'} ${users.map((u) => `${u.name} (${u.email})`).join(', ')}`);
  if (keys !== undefined && keys.length > 0) parts.push(`${keys.length === 1 ? 'the API key' : 'the API keys'} ${keys.map((k) => `"${k.name}"`).join(', ')}`);
  if (parts.length === 0) return null;
  return h('p', { class: 'muted' }, `Limited to ${group.name}: ${parts.join(' and ')}. `,
    offers('users') ? h('a', { href: '#/manage/users' }, 'Users') : null,
    offers('users') && offers('admin') ? ' · ' : null,
    offers('admin') ? h('a', { href: '#/manage/keys' }, 'API keys') : null);
}

export function renderGroups(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const writes = mayWrite();
  const limited = limitedToGroups();
  /** Who is limited to each group, read once with the first page of the list (and again after a refused delete). */
  let access: ScopedAccess = { users: undefined, keys: undefined, problem: undefined };
  let accessRead: Promise<void> | undefined;
  const readAccess = () => {
    accessRead = readScopedAccess(signal).then((read) => {
      access = read;
    }, () => {});
    return accessRead;
  };
  /** Whether the list has its "Scoped access" column: whenever the users or the keys could be read. */
  const showsAccess = () => access.users !== undefined || access.keys !== undefined;

  const nameInput = h('input', { type: 'text', autocomplete: 'off', maxlength: 100 });
  const descriptionInput = h('textarea', { rows: 2, maxlength: 500 });
  const createFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const createForm = h('form', { class: 'card form', 'aria-labelledby': 'create-group-title', novalidate: true },
    h('h2', { id: 'create-group-title' }, 'Create a group'),
    field(nameInput, { label: 'Name', path: '/name', help: '1 to 100 characters, e.g. Berlin vans' }),
    field(descriptionInput, { label: 'Description (optional)', path: '/description' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create')),
    createFeedback);

  const editor = h('div', { class: 'editor' });
  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  const tbody = h('tbody');
  const headRow = h('tr');
  const table = h('table', { class: 'manage-table', 'aria-label': 'Vehicle groups' }, h('thead', {}, headRow), tbody);
  const showHead = () => replace(headRow,
    ...['Name', 'Description', 'Vehicles', ...(showsAccess() ? ['Scoped access'] : []), 'Actions'].map((text) => h('th', { scope: 'col' }, text)));
  showHead();
  /** Why who is limited to the groups could not be read, when it could not. */
  const accessState = h('div', { class: 'feedback' });
  const prev = h('button', { type: 'button' }, '← Previous');
  const next = h('button', { type: 'button' }, 'Next →');
  const pageInfo = h('span', { class: 'page-info', 'aria-live': 'polite' });
  const members = h('div', { class: 'editor' });
  let offset = 0;

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'groups-title' },
    ...panelHeader('Groups', 'groups-title', writes
      ? 'Named sets of vehicles: create and rename groups, and put vehicles in them or take them out. A vehicle can be in several groups. '
        + 'Users and API keys can be limited to groups: they then see only those groups\' vehicles.'
      : limited
        ? 'Your account is limited to these groups: you see their vehicles and no others. An admin of your organization changes the groups.'
        : 'Named sets of vehicles and the vehicles in each. Your role can read groups but not change them.'),
    h('div', { class: 'manage-layout' },
      h('div', { class: 'manage-forms' }, writes ? createForm : null, editor),
      h('div', { class: 'manage-list' },
        h('h2', {}, 'Groups'), listFeedback, listState, accessState,
        h('div', { class: 'table-wrap' }, table),
        h('nav', { class: 'pager', 'aria-label': 'Group pages' }, prev, pageInfo, next),
        members))));

  onSubmit(createForm, createFeedback, async () => {
    const body: Record<string, unknown> = { name: nameInput.value.trim() };
    if (descriptionInput.value.trim() !== '') body.description = descriptionInput.value.trim();
    const created = await api<Group>('POST', '/v2/groups', { body });
    createForm.reset();
    void loadList();
    return `Created ${created.name}.`;
  });

  /** The group shown in the editor and below the list, while there is one. */
  let selected: Group | undefined;
  let listToken = 0;

  async function loadList() {
    const token = ++listToken;
    table.setAttribute('aria-busy', 'true');
    try {
      const [list] = await Promise.all([
        api<GroupList>('GET', '/v2/groups', { query: { limit: PAGE, offset }, signal }),
        accessRead ?? readAccess(),
      ]);
      if (token !== listToken) return;
      replace(listState);
      showHead();
      replace(accessState, access.problem === undefined ? null
        : h('div', {}, h('p', { class: 'muted' }, 'Who is limited to each group could not be read:'), problemBox(access.problem)));
      replace(tbody, ...list.groups.map(rowOf));
      if (list.groups.length === 0) replace(listState, h('p', { class: 'empty' }, list.total === 0 ? 'No groups yet.' : 'No groups on this page.'));
      const first = list.groups.length === 0 ? 0 : list.offset + 1;
      pageInfo.textContent = `${first}–${list.offset + list.groups.length} of ${list.total}`;
      prev.disabled = list.offset === 0;
      next.disabled = list.offset + list.groups.length >= list.total;
    } catch (error) {
      if (signal.aborted || token !== listToken) return;
      replace(tbody);
      replace(listState, problemBox(error));
      pageInfo.textContent = '';
    } finally {
      if (token === listToken) table.removeAttribute('aria-busy');
    }
  }

  function rowOf(group: Group): HTMLTableRowElement {
    const open = h('button', { type: 'button', 'aria-label': `Open ${group.name}` }, 'Open');
    open.addEventListener('click', () => void select(group.id));
    const remove = writes ? confirmButton('Delete', listFeedback, async () => {
      try {
        await api('DELETE', `/v2/groups/${encode(group.id)}`);
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 'group-in-use')) throw error;
        // The service's problem, with its detail, and who holds the group (read again: it may have changed) by name.
        await readAccess();
        if (signal.aborted) return;
        replace(listFeedback, problemBox(error), holdersText(access, group));
        void loadList();
        return;
      }
      if (selected?.id === group.id) close();
      void loadList();
      return `Deleted ${group.name}; its vehicles stay.`;
    }) : null;
    return h('tr', { 'data-group-id': group.id, ...(selected?.id === group.id ? { class: 'selected' } : {}) },
      h('th', { scope: 'row' }, group.name),
      h('td', { class: 'wrap' }, group.description ?? '—'),
      h('td', { class: 'num' }, group.vehicleCount),
      showsAccess() ? h('td', { class: 'cell-access' }, ...accessCell(access, group.id)) : null,
      h('td', { class: 'actions' }, open, remove));
  }

  function close() {
    selected = undefined;
    selectToken++;
    replace(editor);
    replace(members);
    for (const tr of tbody.querySelectorAll('tr.selected')) tr.classList.remove('selected');
  }

  let selectToken = 0;
  async function select(id: string) {
    const token = ++selectToken;
    for (const tr of tbody.querySelectorAll<HTMLElement>('tr')) tr.classList.toggle('selected', tr.dataset.groupId === id);
    replace(editor, h('div', { class: 'card' }, loading('Loading the group…')));
    replace(members);
    try {
      const group = await api<Group>('GET', `/v2/groups/${encode(id)}`, { signal });
      if (token !== selectToken) return;
      show(group);
    } catch (error) {
      if (signal.aborted || token !== selectToken) return;
      replace(editor, h('div', { class: 'card' }, problemBox(error)));
    }
  }

  /** Reads the selected group again (its count after a change) and the list with it. */
  async function refresh() {
    void loadList();
    if (selected === undefined) return;
    const token = selectToken;
    try {
      const group = await api<Group>('GET', `/v2/groups/${encode(selected.id)}`, { signal });
      if (token !== selectToken) return;
      selected = group;
      replace(meta, ...metaOf(group));
    } catch {
      // The list says what there is; the editor keeps what it showed.
    }
  }

  const meta = h('p', { class: 'muted' });
  const heading = h('h2', { id: 'group-editor-title' });
  const membersHeading = h('h2', { id: 'group-members-title' });

  function show(group: Group) {
    selected = group;
    heading.textContent = group.name;
    membersHeading.textContent = `Vehicles in ${group.name}`;
    replace(meta, ...metaOf(group));
    const closeButton = h('button', { type: 'button' }, 'Close');
    closeButton.addEventListener('click', close);
    replace(editor, h('section', { class: 'card', 'aria-labelledby': 'group-editor-title' },
      h('div', { class: 'card-head' }, heading, closeButton),
      meta,
      writes ? null : h('p', {}, group.description ?? 'No description.'),
      writes ? editForm(group) : null,
      writes ? addForm() : null));
    memberOffset = 0;
    replace(members, h('section', { 'aria-labelledby': 'group-members-title' },
      membersHeading, membersFeedback, membersState,
      h('div', { class: 'table-wrap' }, membersTable),
      h('nav', { class: 'pager', 'aria-label': 'Pages of the group\'s vehicles' }, membersPrev, membersInfo, membersNext)));
    replace(membersFeedback);
    void loadMembers();
  }

  function editForm(group: Group): HTMLFormElement {
    const name = h('input', { type: 'text', autocomplete: 'off', maxlength: 100 });
    const description = h('textarea', { rows: 2, maxlength: 500 });
    name.value = group.name;
    description.value = group.description ?? '';
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const form = h('form', { class: 'form', 'aria-label': 'Rename or describe the group', novalidate: true },
      field(name, { label: 'Name', path: '/name' }),
      field(description, { label: 'Description', path: '/description', help: 'Empty removes it.' }),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save changes')),
      feedback);
    onSubmit(form, feedback, async () => {
      const current = selected ?? group;
      const patch: Record<string, unknown> = {};
      if (name.value.trim() !== current.name) patch.name = name.value.trim();
      const newDescription = description.value.trim() === '' ? null : description.value.trim();
      if (newDescription !== current.description) patch.description = newDescription;
      if (Object.keys(patch).length === 0) return 'Nothing to change.';
      const saved = await api<Group>('PATCH', `/v2/groups/${encode(current.id)}`, { body: patch });
      if (selected?.id === saved.id) {
        selected = saved;
        heading.textContent = saved.name;
        membersHeading.textContent = `Vehicles in ${saved.name}`;
        replace(meta, ...metaOf(saved));
      }
      name.value = saved.name;
      description.value = saved.description ?? '';
      void loadList();
      return `Saved ${saved.name}.`;
    });
    return form;
  }

  function addForm(): HTMLFormElement {
    const ids = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const form = h('form', { class: 'form', 'aria-label': 'Add vehicles to the group', novalidate: true },
      h('h3', {}, 'Add vehicles'),
      field(ids, { label: 'Vehicle ids', path: '/vehicleIds', help: 'One or several, separated by commas or spaces; all are added or none.' }),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Add')),
      feedback);
    onSubmit(form, feedback, async () => {
      const group = selected;
      if (group === undefined) return;
      const vehicleIds = [...new Set(listOf(ids.value))];
      await api('POST', `/v2/groups/${encode(group.id)}/vehicles`, { body: { vehicleIds } });
      ids.value = '';
      void refresh();
      void loadMembers();
      return vehicleIds.length === 1 ? `Added ${vehicleIds[0]}.` : `Added ${vehicleIds.length} vehicles.`;
    });
    return form;
  }

  // The selected group's vehicles: the vehicle list filtered by the group.
  const membersFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const membersState = h('div', { class: 'feedback' });
  const membersBody = h('tbody');
  const membersTable = h('table', { class: 'manage-table', 'aria-label': 'Vehicles in the group' },
    h('thead', {}, h('tr', {},
      ...['Vehicle', 'Name', 'Type', 'Status', ...(writes ? ['Actions'] : [])].map((text) => h('th', { scope: 'col' }, text)))),
    membersBody);
  const membersPrev = h('button', { type: 'button' }, '← Previous');
  const membersNext = h('button', { type: 'button' }, 'Next →');
  const membersInfo = h('span', { class: 'page-info', 'aria-live': 'polite' });
  let memberOffset = 0;
  let membersToken = 0;

  async function loadMembers() {
    const group = selected;
    if (group === undefined) return;
    const token = ++membersToken;
    membersTable.setAttribute('aria-busy', 'true');
    try {
      const list = await api<VehicleList>('GET', '/v2/fleet/vehicles', { query: { groupId: group.id, limit: MEMBERS_PAGE, offset: memberOffset }, signal });
      if (token !== membersToken) return;
      replace(membersState);
      replace(membersBody, ...list.vehicles.map((v) => memberOf(group, v)));
      if (list.vehicles.length === 0) {
        replace(membersState, h('p', { class: 'empty' }, list.total === 0 ? 'No vehicles in this group.' : 'No vehicles on this page.'));
      }
      const first = list.vehicles.length === 0 ? 0 : list.offset + 1;
      membersInfo.textContent = `${first}–${list.offset + list.vehicles.length} of ${list.total}`;
      membersPrev.disabled = list.offset === 0;
      membersNext.disabled = list.offset + list.vehicles.length >= list.total;
    } catch (error) {
      if (signal.aborted || token !== membersToken) return;
      replace(membersBody);
      replace(membersState, problemBox(error));
      membersInfo.textContent = '';
    } finally {
      if (token === membersToken) membersTable.removeAttribute('aria-busy');
    }
  }

  function memberOf(group: Group, v: VehicleListItem & { name?: string | null }): HTMLTableRowElement {
    let remove: HTMLButtonElement | null = null;
    if (writes) {
      const button = h('button', { type: 'button', class: 'destructive-outline', 'aria-label': `Remove ${v.id} from the group` }, 'Remove');
      button.addEventListener('click', () => void act(button, membersFeedback, async () => {
        await api('DELETE', `/v2/groups/${encode(group.id)}/vehicles/${encode(v.id)}`);
        void refresh();
        void loadMembers();
        return `Removed ${v.id} from ${selected?.name ?? group.name}.`;
      }));
      remove = button;
    }
    return h('tr', { 'data-vehicle-id': v.id },
      h('th', { scope: 'row' }, h('a', { href: `#/vehicles/${encode(v.id)}` }, v.id)),
      h('td', {}, v.name ?? '—'), h('td', {}, v.type),
      h('td', {}, h('span', { class: `badge status-${v.status}` }, v.status)),
      remove === null ? null : h('td', { class: 'actions' }, remove));
  }

  prev.addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE);
    void loadList();
  });
  next.addEventListener('click', () => {
    offset += PAGE;
    void loadList();
  });
  membersPrev.addEventListener('click', () => {
    memberOffset = Math.max(0, memberOffset - MEMBERS_PAGE);
    void loadMembers();
  });
  membersNext.addEventListener('click', () => {
    memberOffset += MEMBERS_PAGE;
    void loadMembers();
  });
  void loadList();
  return () => controller.abort();
}

function metaOf(group: Group): string[] {
  const count = group.vehicleCount === 1 ? '1 vehicle' : `${group.vehicleCount} vehicles`;
  return [`${count} · created ${formatTime(group.createdAt)} · changed ${formatTime(group.updatedAt)}`];
}
