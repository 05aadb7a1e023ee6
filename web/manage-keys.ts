// API keys: create one with the scopes it needs, optionally limited to vehicle groups (its secret
// shown once, with a copy button), list the organization's keys, revoke one. Needs a key with
// `admin`. docs/API.md "API keys, organizations and quotas", "Scoped credentials".
import { api, encode, type ApiKey } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { checkboxGroup, confirmButton, field, loading, onSubmit, panelHeader, problemBox, showSecret, uid } from './forms.ts';
import { type Group, groupPicker, groupsUnreadable, limitText, readGroups } from './groups.ts';
import { ORGANIZATION_WIDE_SCOPES, SCOPES } from './lists.ts';

const SCOPE_TEXT: Record<string, string> = {
  'fleet:read': 'read vehicles, devices, geofences, alert rules',
  'fleet:write': 'register, change and delete vehicles and devices',
  'telemetry:read': 'read telemetry, history, trips, exports',
  'telemetry:write': 'send telemetry (HTTP, MQTT)',
  streams: 'open live streams',
  admin: 'manage API keys and OAuth clients',
  'events:read': 'read the event feed and alerts',
  rules: 'manage geofences, alert rules and alerts',
  webhooks: 'manage webhook endpoints',
  'metrics:read': 'read /metrics (platform organization)',
  users: 'invite users, change their roles, disable, delete',
  'audit:read': 'read the audit log',
  commands: 'send and cancel device commands',
  dispatch: 'assign drivers to vehicles',
  'alerts:write': 'acknowledge and resolve alerts',
};


const PAGE = 100;

export function renderManageKeys(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const name = h('input', { type: 'text', autocomplete: 'off', maxlength: 100 });
  const scopes = checkboxGroup('Scopes', SCOPES, { path: '/scopes', describe: (scope) => SCOPE_TEXT[scope] ?? '' });
  /** Why some scopes cannot be chosen: shown while the key is limited to groups. */
  const wideNote = h('p', { class: 'help', id: uid('wide-scopes'), hidden: true },
    `A key limited to groups cannot hold ${ORGANIZATION_WIDE_SCOPES.join(', ')}: they act on the whole organization.`);
  scopes.element.querySelector('legend')?.after(wideNote);
  /** Where the group choice goes once the groups are read. */
  const groupSlot = h('div', {}, loading('Reading the groups…'));
  let picker: ReturnType<typeof groupPicker> | undefined;
  /** Limited to groups, the organization-wide scopes are off and cannot be chosen. */
  const syncScopes = () => {
    const limited = (picker?.value().length ?? 0) > 0;
    wideNote.hidden = !limited;
    for (const box of scopes.boxes) {
      if (!(ORGANIZATION_WIDE_SCOPES as readonly string[]).includes(box.value)) continue;
      box.disabled = limited;
      if (limited) {
        box.checked = false;
        box.setAttribute('aria-describedby', wideNote.id);
      } else {
        box.removeAttribute('aria-describedby');
      }
    }
  };
  const expires = h('input', { type: 'datetime-local' });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const secretSlot = h('div');
  const form = h('form', { class: 'card form', 'aria-labelledby': 'new-key-title', novalidate: true },
    h('h2', { id: 'new-key-title' }, 'Create an API key'),
    field(name, { label: 'Name', path: '/name', help: 'What the key is for, e.g. "telematics gateway".' }),
    groupSlot,
    scopes.element,
    field(expires, { label: 'Expires (optional, your local time)', path: '/expiresAt' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create key')),
    feedback, secretSlot);

  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table', 'aria-label': 'API keys' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col' }, 'Scopes and groups'),
      h('th', { scope: 'col' }, 'Created'), h('th', { scope: 'col' }, 'Last used'), h('th', { scope: 'col' }, 'Expires'),
      h('th', { scope: 'col' }, 'Actions'))),
    tbody);
  const more = h('p', { class: 'muted' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'keys-title' },
    ...panelHeader('API keys', 'keys-title',
      'Keys of this organization. A key is shown once, when it is created; the service keeps only its hash. A key limited to vehicle groups sees only '
      + 'those groups\' vehicles and registers vehicles only into them. Managing keys needs the admin scope.'),
    h('div', { class: 'manage-layout wide-list' },
      h('div', { class: 'manage-forms' }, form),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Keys'), listFeedback, listState, h('div', { class: 'table-wrap' }, table), more))));

  onSubmit(form, feedback, async () => {
    replace(secretSlot);
    const body: Record<string, unknown> = { name: name.value.trim(), scopes: scopes.selected() };
    const groupIds = picker?.value() ?? [];
    if (groupIds.length > 0) body.groupIds = groupIds;
    if (expires.value !== '') {
      const at = new Date(expires.value);
      body.expiresAt = Number.isNaN(at.getTime()) ? expires.value : at.toISOString();
    }
    const created = await api<ApiKey & { key: string }>('POST', '/v2/api-keys', { body });
    form.reset();
    syncScopes();
    showSecret(secretSlot, {
      title: `New key "${created.name}"`,
      label: 'API key',
      secret: created.key,
      note: 'Copy it now and keep it somewhere safe: it is not shown again.',
    });
    void loadList();
  });

  /** The organization's groups, for their names. */
  let groupsById = new Map<string, Group>();

  async function loadGroups() {
    try {
      const groups = await readGroups(signal);
      groupsById = new Map(groups.map((g) => [g.id, g]));
      picker = groupPicker(groups, [], { help: 'None chosen: the whole organization.' });
      picker.element.addEventListener('change', syncScopes);
      replace(groupSlot, picker.element);
    } catch (error) {
      if (signal.aborted) return;
      replace(groupSlot, groupsUnreadable(error, 'Groups cannot be chosen here now: a key made now has the whole organization.'));
    }
  }

  async function loadList() {
    table.setAttribute('aria-busy', 'true');
    try {
      const list = await api<{ apiKeys: ApiKey[]; total: number }>('GET', '/v2/api-keys', { query: { limit: PAGE }, signal });
      replace(listState);
      replace(tbody, ...list.apiKeys.map(rowOf));
      if (list.apiKeys.length === 0) replace(listState, h('p', { class: 'empty' }, 'No keys.'));
      more.textContent = list.total > list.apiKeys.length ? `The first ${list.apiKeys.length} of ${list.total} keys.` : '';
    } catch (error) {
      if (signal.aborted) return;
      replace(tbody);
      replace(listState, problemBox(error));
    } finally {
      table.removeAttribute('aria-busy');
    }
  }

  function rowOf(key: ApiKey): HTMLTableRowElement {
    const revoke = confirmButton('Revoke', listFeedback, async () => {
      await api('DELETE', `/v2/api-keys/${encode(key.id)}`);
      void loadList();
      return `Revoked "${key.name}".`;
    });
    return h('tr', { 'data-key-id': key.id },
      h('th', { scope: 'row' }, key.name),
      h('td', {}, h('code', {}, `${key.prefix}…`)),
      // The groups under the scopes: no column of their own, so the table still fits its card.
      h('td', { class: 'wrap' }, ...key.scopes.map((s) => h('span', { class: 'chip' }, s)),
        h('p', { class: 'cell-groups' }, h('span', { class: 'muted' }, 'Groups: '), h('span', { class: 'limit' }, limitText(key.groupIds, groupsById)))),
      h('td', {}, formatTime(key.createdAt)),
      h('td', {}, key.lastUsedAt === null ? 'never' : formatTime(key.lastUsedAt)),
      h('td', {}, key.expiresAt === null ? 'never' : formatTime(key.expiresAt)),
      h('td', { class: 'actions' }, revoke));
  }

  // The list waits for the groups, so that its rows name them.
  void loadGroups().then(loadList);
  return () => controller.abort();
}
