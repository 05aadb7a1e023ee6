// The audit log: who did what to which resource and how it ended, newest first, filtered by time,
// actor, action, outcome and resource, read a page at a time by following `nextCursor`. Entries
// are never changed, so a row has no actions. Needs audit:read. docs/API.md "Audit log".
import { api, type AuditEntry, type AuditLogPage } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { field, loading, panelHeader, problemBox, select, uid } from './forms.ts';
import { AUDIT_ACTIONS, AUDIT_OUTCOMES, AUDIT_RESOURCE_TYPES } from './lists.ts';

const PAGE_SIZES = [10, 25, 50, 100, 200] as const;
const DEFAULT_PAGE = 50;

const ACTOR_TEXT: Record<AuditEntry['actor']['type'], string> = {
  user: 'user',
  apiKey: 'API key',
  oauthClient: 'OAuth client',
  system: 'the service',
  anonymous: 'no valid credential',
};

const OUTCOME_CLASS: Record<AuditEntry['outcome'], string> = {
  succeeded: 'outcome-succeeded',
  denied: 'outcome-denied',
  failed: 'outcome-failed',
};

/** A `datetime-local` value (the person's own time, no zone) as the instant the API wants; empty: no bound. */
function instantOf(local: string): string | undefined {
  if (local === '') return undefined;
  const at = new Date(local);
  // Not a time after all: sent as typed, so the service names the problem.
  return Number.isNaN(at.getTime()) ? local : at.toISOString();
}

function suggestions(values: readonly string[]): HTMLDataListElement {
  return h('datalist', { id: uid('audit-list') }, ...values.map((value) => h('option', { value })));
}

function textInput(list?: HTMLDataListElement): HTMLInputElement {
  return h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: 255, ...(list === undefined ? {} : { list: list.id }) });
}

function rowOf(entry: AuditEntry): HTMLTableRowElement {
  const { actor, resource } = entry;
  const who = actor.name ?? actor.id ?? '—';
  const whoMore = [ACTOR_TEXT[actor.type] ?? actor.type, actor.name !== null && actor.id !== null ? actor.id : null].filter((s) => s !== null).join(' · ');
  const request = [entry.requestId === null ? null : `Request id: ${entry.requestId}`, entry.userAgent === null ? null : `User agent: ${entry.userAgent}`]
    .filter((s) => s !== null).join('\n');
  return h('tr', { 'data-entry-id': entry.id, 'data-action': entry.action, 'data-outcome': entry.outcome },
    h('td', { class: 'cell-updated' }, h('time', { datetime: entry.at, title: entry.at }, formatTime(entry.at))),
    h('td', { class: 'audit-actor' }, h('span', {}, who), h('br'), h('span', { class: 'muted small' }, whoMore)),
    h('th', { scope: 'row' }, h('code', {}, entry.action)),
    h('td', {}, resource.type ?? '—', resource.id === null ? null : h('br'), resource.id === null ? null : h('code', { class: 'small' }, resource.id)),
    h('td', {}, h('span', { class: `badge ${OUTCOME_CLASS[entry.outcome] ?? ''}` }, entry.outcome)),
    h('td', { class: 'num' }, entry.status),
    h('td', request === '' ? {} : { title: request }, h('span', { class: 'audit-method' }, entry.method), ' ', h('code', { class: 'small' }, entry.path)),
    h('td', {}, entry.ip ?? '—'));
}

export function renderAudit(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;

  const actions = suggestions(AUDIT_ACTIONS);
  const resourceTypes = suggestions(AUDIT_RESOURCE_TYPES);
  const from = h('input', { type: 'datetime-local' });
  const to = h('input', { type: 'datetime-local' });
  const actorId = textInput();
  const action = textInput(actions);
  const outcome = select(AUDIT_OUTCOMES, { placeholder: 'Any' });
  const resourceType = textInput(resourceTypes);
  const resourceId = textInput();
  const perPage = select(PAGE_SIZES.map(String));
  perPage.value = String(DEFAULT_PAGE);
  const clear = h('button', { type: 'button' }, 'Clear');
  const form = h('form', { class: 'card audit-filters', role: 'search', 'aria-label': 'Filter the audit log', novalidate: true },
    field(from, { label: 'From', help: 'Your local time; entries at or after it.' }),
    field(to, { label: 'To', help: 'Entries before it.' }),
    field(actorId, { label: 'Actor id', help: 'A user, API key or OAuth client id.' }),
    field(action, { label: 'Action', help: 'e.g. vehicle.created' }),
    field(outcome, { label: 'Outcome' }),
    field(resourceType, { label: 'Resource type', help: 'e.g. vehicle' }),
    field(resourceId, { label: 'Resource id' }),
    field(perPage, { label: 'Per page' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Filter'), clear),
    actions, resourceTypes);

  /** What reading the page said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table audit-table', 'aria-label': 'Audit log entries' },
    h('thead', {}, h('tr', {},
      ...['Time', 'Actor', 'Action', 'Resource', 'Outcome', 'Status', 'Request', 'IP'].map((text) => h('th', { scope: 'col' }, text)))),
    tbody);
  const newest = h('button', { type: 'button' }, 'Newest');
  const newer = h('button', { type: 'button', disabled: true }, 'Newer');
  const older = h('button', { type: 'button', disabled: true }, 'Older');
  const pageInfo = h('span', { class: 'page-info', 'aria-live': 'polite' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'audit-title' },
    ...panelHeader('Audit log', 'audit-title',
      'Who did what, newest first: every change made through the API, every sign-in, and every refused or failed request. '
      + 'Entries are kept as they were written and cannot be changed. Reading the log needs the audit:read scope.'),
    form, listState,
    h('div', { class: 'table-wrap' }, table),
    h('nav', { class: 'pager', 'aria-label': 'Audit log pages' }, newest, newer, pageInfo, older)));

  /** The filters of the last "Filter": paging keeps to them whatever has been typed since. */
  let applied: Record<string, string | undefined> = {};
  let limit = DEFAULT_PAGE;
  /** The cursor of each page reached, the newest page's undefined: "Newer" walks back along it. */
  let cursors: Array<string | undefined> = [undefined];
  let index = 0;
  let token = 0;

  function apply() {
    applied = {
      from: instantOf(from.value),
      to: instantOf(to.value),
      actorId: actorId.value.trim(),
      action: action.value.trim(),
      outcome: outcome.value,
      resourceType: resourceType.value.trim(),
      resourceId: resourceId.value.trim(),
    };
    limit = Number(perPage.value);
    cursors = [undefined];
    void show(0);
  }

  async function show(at: number) {
    const mine = ++token;
    table.setAttribute('aria-busy', 'true');
    try {
      const page = await api<AuditLogPage>('GET', '/v2/audit-log', { query: { ...applied, limit, cursor: cursors[at] }, signal });
      if (mine !== token) return;
      index = at;
      cursors.length = at + 1;
      if (page.nextCursor !== null) cursors.push(page.nextCursor);
      replace(tbody, ...page.entries.map(rowOf));
      const filtered = Object.values(applied).some((value) => value !== undefined && value !== '');
      replace(listState, page.entries.length > 0 ? null : h('p', { class: 'empty' },
        at > 0 ? 'No older entries.' : filtered ? 'No entries match these filters.' : 'No entries yet.'));
      const first = at * limit + 1;
      pageInfo.textContent = page.entries.length === 0 ? '' : `Page ${at + 1}: entries ${first}–${first + page.entries.length - 1}`;
      newer.disabled = at === 0;
      older.disabled = page.nextCursor === null;
    } catch (error) {
      if (signal.aborted || mine !== token) return;
      replace(tbody);
      replace(listState, problemBox(error));
      pageInfo.textContent = '';
      newer.disabled = true;
      older.disabled = true;
    } finally {
      if (mine === token) table.removeAttribute('aria-busy');
    }
    // A button that has just been disabled (the last page reached) would take the focus with it.
    if (document.activeElement instanceof HTMLButtonElement && document.activeElement.disabled) newest.focus();
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
  outcome.addEventListener('change', apply);
  perPage.addEventListener('change', apply);
  clear.addEventListener('click', () => {
    form.reset();
    perPage.value = String(DEFAULT_PAGE);
    apply();
  });
  newest.addEventListener('click', () => void show(0));
  newer.addEventListener('click', () => void show(Math.max(0, index - 1)));
  older.addEventListener('click', () => {
    if (cursors[index + 1] !== undefined) void show(index + 1);
  });

  replace(listState, loading('Reading the audit log…'));
  apply();
  return () => controller.abort();
}
