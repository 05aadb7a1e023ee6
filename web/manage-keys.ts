// API keys: create one with the scopes it needs (its secret shown once, with a copy button), list
// the organization's keys, revoke one. Needs a key with `admin`. docs/API.md "API keys,
// organizations and quotas".
import { api, encode, type ApiKey } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { checkboxGroup, confirmButton, field, onSubmit, panelHeader, problemBox, secretBox } from './forms.ts';
import { SCOPES } from './lists.ts';

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
  const expires = h('input', { type: 'datetime-local' });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const secretSlot = h('div');
  const form = h('form', { class: 'card form', 'aria-labelledby': 'new-key-title', novalidate: true },
    h('h2', { id: 'new-key-title' }, 'Create an API key'),
    field(name, { label: 'Name', path: '/name', help: 'What the key is for, e.g. "telematics gateway".' }),
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
      h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col' }, 'Scopes'),
      h('th', { scope: 'col' }, 'Created'), h('th', { scope: 'col' }, 'Last used'), h('th', { scope: 'col' }, 'Expires'),
      h('th', { scope: 'col' }, 'Actions'))),
    tbody);
  const more = h('p', { class: 'muted' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'keys-title' },
    ...panelHeader('API keys', 'keys-title',
      'Keys of this organization. A key is shown once, when it is created; the service keeps only its hash. Managing keys needs the admin scope.'),
    h('div', { class: 'manage-layout wide-list' },
      h('div', { class: 'manage-forms' }, form),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Keys'), listFeedback, listState, h('div', { class: 'table-wrap' }, table), more))));

  onSubmit(form, feedback, async () => {
    replace(secretSlot);
    const body: Record<string, unknown> = { name: name.value.trim(), scopes: scopes.selected() };
    if (expires.value !== '') {
      const at = new Date(expires.value);
      body.expiresAt = Number.isNaN(at.getTime()) ? expires.value : at.toISOString();
    }
    const created = await api<ApiKey & { key: string }>('POST', '/v2/api-keys', { body });
    form.reset();
    replace(secretSlot, secretBox({
      title: `New key "${created.name}"`,
      label: 'API key',
      secret: created.key,
      note: 'Copy it now and keep it somewhere safe: it is not shown again.',
    }));
    void loadList();
  });

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
      h('td', { class: 'wrap' }, ...key.scopes.map((s) => h('span', { class: 'chip' }, s))),
      h('td', {}, formatTime(key.createdAt)),
      h('td', {}, key.lastUsedAt === null ? 'never' : formatTime(key.lastUsedAt)),
      h('td', {}, key.expiresAt === null ? 'never' : formatTime(key.expiresAt)),
      h('td', { class: 'actions' }, revoke));
  }

  void loadList();
  return () => controller.abort();
}
