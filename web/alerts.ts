// Alerts: the unresolved alerts (or any status), acknowledged and resolved here, kept current by
// the live event stream (alert.opened, alert.acknowledged, alert.resolved); and the alert rules
// that open them: threshold, offline, inside or outside a geofence. docs/API.md "Alert rules and
// alerts".
import { api, encode, type Alert, type AlertCondition, type AlertRule, type Geofence } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { describeState, type EventEnvelope, listenToEvents } from './event-stream.ts';
import { act, confirmButton, field, listOf, numberOf, onSubmit, panelHeader, problemBox, select, uid } from './forms.ts';
import { THRESHOLD_FIELDS } from './lists.ts';

const OPS = ['>', '>=', '<', '<=', '==', '!='] as const;
const UNITS: Record<string, string> = { speed: ' km/h', battery: ' %', temperature: ' °C', odometer: ' km', heading: '°' };

export type { Alert };
type Condition = AlertCondition;
type Rule = AlertRule;

const STATUS_FILTERS: Record<string, { label: string; statuses: string[] }> = {
  unresolved: { label: 'Unresolved (open or acknowledged)', statuses: ['open', 'acknowledged'] },
  open: { label: 'Open', statuses: ['open'] },
  acknowledged: { label: 'Acknowledged', statuses: ['acknowledged'] },
  resolved: { label: 'Resolved', statuses: ['resolved'] },
  all: { label: 'All', statuses: ['open', 'acknowledged', 'resolved'] },
};
const PAGE = 50;

function seconds(n: number): string {
  if (n % 3600 === 0 && n >= 3600) return `${n / 3600} h`;
  if (n % 60 === 0 && n >= 60) return `${n / 60} min`;
  return `${n} s`;
}

export function describeCondition(condition: Condition, geofences: ReadonlyMap<string, string> = new Map()): string {
  const held = (s: number | undefined) => (s === undefined || s === 0 ? '' : ` for ${seconds(s)}`);
  switch (condition.kind) {
    case 'threshold':
      return `${condition.field} ${condition.op} ${JSON.stringify(condition.value)}${UNITS[condition.field] ?? ''}${held(condition.forSeconds)}`;
    case 'offline':
      return `no telemetry for ${seconds(condition.afterSeconds)}`;
    case 'geofence':
      return `${condition.when} ${geofences.get(condition.geofenceId) ?? condition.geofenceId}${held(condition.forSeconds)}`;
  }
}

function triggerText(value: unknown, condition: Condition | undefined): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'number' && condition?.kind === 'threshold') return `${value}${UNITS[condition.field] ?? ''}`;
  if (typeof value === 'object') {
    const { lat, lng } = value as { lat?: unknown; lng?: unknown };
    if (typeof lat === 'number' && typeof lng === 'number') return `${lat.toFixed(5)}, ${lng.toFixed(5)}`;
    return JSON.stringify(value);
  }
  if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value)) return `last seen ${formatTime(value)}`;
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

function statusBadge(status: string): HTMLElement {
  return h('span', { class: `badge alert-${status}` }, status);
}

export function renderAlerts(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const geofenceNames = new Map<string, string>();
  /** The rules by id, for the unit of an alert's trigger value. */
  const ruleConditions = new Map<string, Condition>();

  // Alerts.
  const statusFilter = select(Object.keys(STATUS_FILTERS), { id: uid('alert-status'), labels: Object.fromEntries(Object.entries(STATUS_FILTERS).map(([k, v]) => [k, v.label])) });
  const vehicleFilter = h('input', { type: 'search', id: uid('alert-vehicle'), autocomplete: 'off', spellcheck: 'false' });
  const filterForm = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter alerts' },
    h('label', { for: statusFilter.id }, 'Status '), statusFilter,
    h('label', { for: vehicleFilter.id }, 'Vehicle '), vehicleFilter, h('button', { type: 'submit' }, 'Filter'));
  const liveNote = h('p', { class: 'muted live-note', role: 'status' });
  const announce = h('p', { class: 'visually-hidden', 'aria-live': 'polite' });
  const alertFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table alerts', 'aria-label': 'Alerts' },
    h('thead', {}, h('tr', {}, ...['Rule', 'Vehicle', 'Status', 'Opened', 'Trigger', 'Acknowledged', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
    tbody);
  const older = h('button', { type: 'button', hidden: true }, 'Older alerts');

  // Rules.
  const rulesFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  const rulesBody = h('tbody');
  const rulesTable = h('table', { class: 'manage-table', 'aria-label': 'Alert rules' },
    h('thead', {}, h('tr', {}, ...['Name', 'Condition', 'Vehicles', 'Enabled', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
    rulesBody);

  const ruleForm = ruleEditor(() => void loadRules(), geofenceNames);

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'alerts-title' },
    ...panelHeader('Alerts', 'alerts-title',
      'Alerts opened by the rules below, live. Acknowledging and resolving need the rules scope; reading needs events:read.'),
    h('section', { 'aria-labelledby': 'alert-list-title' },
      h('div', { class: 'card-head' }, h('h2', { id: 'alert-list-title' }, 'Alerts'), liveNote),
      filterForm, alertFeedback, announce,
      h('div', { class: 'table-wrap' }, table), older),
    h('section', { class: 'rules', 'aria-labelledby': 'rules-title' },
      h('h2', { id: 'rules-title' }, 'Alert rules'),
      h('div', { class: 'manage-layout' },
        h('div', { class: 'manage-forms' }, ruleForm),
        h('div', { class: 'manage-list' }, rulesFeedback, listState, h('div', { class: 'table-wrap' }, rulesTable))))));

  const rows = new Map<string, HTMLTableRowElement>();
  /** How far each alert has got: an event that arrives late never takes it back to an earlier status. */
  const seen = new Map<string, number>();
  const RANK: Record<string, number> = { open: 0, acknowledged: 1, resolved: 2 };
  let cursor: string | null = null;
  let token = 0;
  /**
   * Alerts from the stream while the list is read again: that read may have been answered before
   * they changed, so they are shown once more over its rows.
   */
  let arrived: Map<string, Alert> | undefined;

  function filterNow() {
    return { statuses: STATUS_FILTERS[statusFilter.value]?.statuses ?? ['open', 'acknowledged'], vehicle: vehicleFilter.value.trim() };
  }

  function alertRow(alert: Alert): HTMLTableRowElement {
    const actions = h('td', { class: 'actions' });
    const rowFeedback = h('div', { class: 'feedback' });
    if (alert.status !== 'resolved') {
      // One optional note, kept in the event of whichever action it goes with.
      const note = h('input', { type: 'text', class: 'note', id: uid('alert-note'), maxlength: 500, autocomplete: 'off', placeholder: 'Note (optional)' });
      const body = () => (note.value.trim() === '' ? {} : { note: note.value.trim() });
      actions.append(h('label', { class: 'visually-hidden', for: note.id }, 'Note'), note);
      if (alert.status === 'open') {
        const ack = h('button', { type: 'button' }, 'Acknowledge');
        ack.addEventListener('click', () => void act(ack, rowFeedback, async () => {
          // Sent: an update of the row arriving meanwhile does not carry the note over.
          note.disabled = true;
          try {
            show(await api<Alert>('POST', `/v2/alerts/${encode(alert.id)}/acknowledge`, { body: body() }));
          } finally {
            note.disabled = false;
          }
        }));
        actions.append(ack);
      }
      const resolve = h('button', { type: 'button' }, 'Resolve');
      resolve.addEventListener('click', () => void act(resolve, rowFeedback, async () => {
        // Sent: an update of the row arriving meanwhile does not carry the note over.
        note.disabled = true;
        try {
          show(await api<Alert>('POST', `/v2/alerts/${encode(alert.id)}/resolve`, { body: body() }));
        } finally {
          note.disabled = false;
        }
      }));
      actions.append(resolve);
    }
    actions.append(rowFeedback);
    return h('tr', { 'data-alert-id': alert.id, 'data-status': alert.status },
      h('th', { scope: 'row' }, alert.ruleName),
      h('td', {}, h('a', { href: `#/vehicles/${encode(alert.vehicleId)}` }, alert.vehicleId)),
      h('td', {}, statusBadge(alert.status)),
      h('td', {}, formatTime(alert.openedAt)),
      h('td', {}, triggerText(alert.trigger.value, ruleConditions.get(alert.ruleId))),
      h('td', {}, alert.acknowledgedAt === null ? '—' : `${formatTime(alert.acknowledgedAt)} by ${alert.acknowledgedBy ?? '?'}`),
      actions);
  }

  function emptyNote() {
    if (rows.size === 0) replace(alertFeedback, h('p', { class: 'empty' }, 'No alerts match.'));
    else if (alertFeedback.querySelector('.empty') !== null) replace(alertFeedback);
  }

  /** Puts an alert where it belongs: its row updated, added on top, or taken out of this view. */
  function show(alert: Alert, fromStream = false) {
    const rank = RANK[alert.status] ?? 0;
    if ((seen.get(alert.id) ?? -1) > rank) return;
    seen.set(alert.id, rank);
    const { statuses, vehicle } = filterNow();
    const matches = statuses.includes(alert.status) && (vehicle === '' || vehicle === alert.vehicleId);
    const existing = rows.get(alert.id);
    if (!matches) {
      if (existing !== undefined) {
        existing.remove();
        rows.delete(alert.id);
        announce.textContent = `${alert.ruleName} on ${alert.vehicleId}: ${alert.status}.`;
      }
      emptyNote();
      return;
    }
    const row = alertRow(alert);
    rows.set(alert.id, row);
    // A note being typed survives the row's update.
    const before = existing?.querySelector<HTMLInputElement>('input.note');
    const typed = before === null || before === undefined || before.disabled ? '' : before.value;
    const note = row.querySelector<HTMLInputElement>('input.note');
    if (note !== null) note.value = typed;
    if (existing !== undefined) existing.replaceWith(row);
    else {
      tbody.prepend(row);
      if (fromStream) row.classList.add('updated');
    }
    if (fromStream) announce.textContent = `${alert.ruleName} on ${alert.vehicleId}: ${alert.status}.`;
    emptyNote();
  }

  async function loadAlerts(append: boolean) {
    const mine = ++token;
    if (!append) arrived = new Map();
    const { statuses, vehicle } = filterNow();
    table.setAttribute('aria-busy', 'true');
    try {
      const page = await api<{ alerts: Alert[]; nextCursor: string | null }>('GET', '/v2/alerts', {
        query: { status: statuses.join(','), vehicleId: vehicle === '' ? undefined : vehicle, limit: PAGE, cursor: append && cursor !== null ? cursor : undefined },
        signal,
      });
      if (mine !== token) return;
      replace(alertFeedback);
      if (!append) {
        rows.clear();
        replace(tbody);
      }
      for (const alert of page.alerts) {
        if (rows.has(alert.id) || (seen.get(alert.id) ?? -1) > (RANK[alert.status] ?? 0)) continue;
        seen.set(alert.id, RANK[alert.status] ?? 0);
        const row = alertRow(alert);
        rows.set(alert.id, row);
        tbody.append(row);
      }
      if (!append && arrived !== undefined) {
        for (const alert of arrived.values()) show(alert, true);
        arrived = undefined;
      }
      cursor = page.nextCursor;
      older.hidden = cursor === null;
      emptyNote();
    } catch (error) {
      if (signal.aborted || mine !== token) return;
      replace(alertFeedback, problemBox(error));
    } finally {
      if (mine === token) {
        arrived = undefined;
        table.removeAttribute('aria-busy');
      }
    }
  }

  /** Every geofence, page by page: a page of large geofences ends before its limit. */
  async function allGeofences(): Promise<Geofence[]> {
    const all: Geofence[] = [];
    for (let offset: number | null = 0; offset !== null;) {
      const page: { geofences: Geofence[]; nextOffset: number | null } = await api('GET', '/v2/geofences', { query: { limit: 1000, offset }, signal });
      all.push(...page.geofences);
      offset = page.nextOffset;
    }
    return all;
  }

  async function loadRules() {
    try {
      const [rules, geofences] = await Promise.all([
        api<{ alertRules: Rule[]; total: number }>('GET', '/v2/alert-rules', { query: { limit: 1000 }, signal }),
        allGeofences().catch((): Geofence[] => []),
      ]);
      geofenceNames.clear();
      ruleConditions.clear();
      for (const r of rules.alertRules) ruleConditions.set(r.id, r.condition);
      for (const g of geofences) geofenceNames.set(g.id, g.name);
      ruleForm.dispatchEvent(new CustomEvent('geofences'));
      replace(listState);
      replace(rulesBody, ...rules.alertRules.map(ruleRow));
      if (rules.alertRules.length === 0) replace(listState, h('p', { class: 'empty' }, 'No alert rules yet.'));
    } catch (error) {
      if (signal.aborted) return;
      replace(listState, problemBox(error));
    }
  }

  function ruleRow(rule: Rule): HTMLTableRowElement {
    let current = rule;
    const toggle = h('button', { type: 'button', 'aria-pressed': String(rule.enabled) }, rule.enabled ? 'Enabled' : 'Disabled');
    toggle.addEventListener('click', () => void act(toggle, rulesFeedback, async () => {
      current = await api<Rule>('PUT', `/v2/alert-rules/${encode(current.id)}`, {
        body: { name: current.name, condition: current.condition, vehicleIds: current.vehicleIds, enabled: !current.enabled },
      });
      toggle.textContent = current.enabled ? 'Enabled' : 'Disabled';
      toggle.setAttribute('aria-pressed', String(current.enabled));
      return `${current.name} is ${current.enabled ? 'enabled' : 'disabled'}.`;
    }));
    const remove = confirmButton('Delete', rulesFeedback, async () => {
      await api('DELETE', `/v2/alert-rules/${encode(rule.id)}`);
      void loadRules();
      return `Deleted the rule ${rule.name}.`;
    });
    return h('tr', { 'data-rule-id': rule.id },
      h('th', { scope: 'row' }, rule.name),
      h('td', {}, describeCondition(rule.condition, geofenceNames)),
      h('td', { class: 'wrap' }, rule.vehicleIds === null ? 'all' : rule.vehicleIds.join(', ')),
      h('td', {}, toggle),
      h('td', { class: 'actions' }, remove));
  }

  const stopListening = listenToEvents({
    event(envelope: EventEnvelope) {
      if (!envelope.type.startsWith('alert.')) return;
      const alert = envelope.data as unknown as Alert;
      if (typeof alert.id !== 'string' || typeof alert.status !== 'string') return;
      arrived?.set(alert.id, alert);
      show(alert, true);
    },
    state(state, why) {
      liveNote.textContent = describeState(state, why);
    },
    restart() {
      void loadAlerts(false);
    },
  });

  filterForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void loadAlerts(false);
  });
  statusFilter.addEventListener('change', () => void loadAlerts(false));
  older.addEventListener('click', () => void loadAlerts(true));
  // The rules first: an alert's trigger is shown with its field's unit.
  void loadRules().finally(() => void loadAlerts(false));
  return () => {
    controller.abort();
    stopListening();
  };
}

/** The form that creates a rule; its fields follow the kind of condition chosen. */
function ruleEditor(created: () => void, geofenceNames: ReadonlyMap<string, string>): HTMLFormElement {
  const name = h('input', { type: 'text', autocomplete: 'off', maxlength: 200 });
  const kind = select(['threshold', 'offline', 'geofence'], {
    labels: { threshold: 'A value crosses a threshold', offline: 'No telemetry for a while (offline)', geofence: 'Inside or outside a geofence' },
  });
  const fieldSelect = select([...THRESHOLD_FIELDS, 'diagnostics']);
  const diagKey = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. engineTemp' });
  const op = select(OPS);
  const value = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const forSeconds = h('input', { type: 'number', min: 0, step: 1, placeholder: '0' });
  const afterSeconds = h('input', { type: 'number', min: 60, step: 1, value: 300 });
  const geofence = select([], { placeholder: 'Choose a geofence' });
  const when = select(['inside', 'outside']);
  const vehicles = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const enabled = h('input', { type: 'checkbox', checked: true, id: uid('rule-enabled') });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });

  const thresholdFields = h('div', { class: 'kind-fields' },
    field(fieldSelect, { label: 'Field', path: '/condition/field' }),
    field(diagKey, { label: 'Diagnostics key', path: '/condition/field', className: 'diag-key' }),
    field(op, { label: 'Comparison', path: '/condition/op' }),
    field(value, { label: 'Value', path: '/condition/value', help: 'A number; for diagnostics also text, true or false (with == or !=).' }));
  const offlineFields = h('div', { class: 'kind-fields' },
    field(afterSeconds, { label: 'Silent for (seconds)', path: '/condition/afterSeconds', help: '60 to 604,800.' }));
  const geofenceFields = h('div', { class: 'kind-fields' },
    field(geofence, { label: 'Geofence', path: '/condition/geofenceId' }),
    field(when, { label: 'When the vehicle is', path: '/condition/when' }));
  const holdField = field(forSeconds, { label: 'Held for (seconds, optional)', path: '/condition/forSeconds', help: 'In record time, before the alert opens.' });
  const diagField = diagKey.parentElement as HTMLElement;

  const form = h('form', { class: 'card form', 'aria-labelledby': 'new-rule-title', novalidate: true },
    h('h3', { id: 'new-rule-title' }, 'Create an alert rule'),
    field(name, { label: 'Name', path: '/name' }),
    field(kind, { label: 'Condition', path: '/condition' }),
    thresholdFields, offlineFields, geofenceFields, holdField,
    field(vehicles, { label: 'Vehicles (optional)', path: '/vehicleIds', help: 'Comma-separated ids; empty: every vehicle.' }),
    h('label', { class: 'check', for: enabled.id }, enabled, ' Enabled'),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create rule')),
    feedback);

  const arrange = () => {
    thresholdFields.hidden = kind.value !== 'threshold';
    offlineFields.hidden = kind.value !== 'offline';
    geofenceFields.hidden = kind.value !== 'geofence';
    holdField.hidden = kind.value === 'offline';
    diagField.hidden = fieldSelect.value !== 'diagnostics';
  };
  kind.addEventListener('change', arrange);
  fieldSelect.addEventListener('change', arrange);
  arrange();
  form.addEventListener('geofences', () => {
    const chosen = geofence.value;
    replace(geofence, h('option', { value: '' }, geofenceNames.size === 0 ? 'No geofences yet' : 'Choose a geofence'),
      ...[...geofenceNames].map(([id, label]) => h('option', { value: id }, label)));
    geofence.value = geofenceNames.has(chosen) ? chosen : '';
  });

  const typedValue = (): number | string | boolean => {
    const text = value.value.trim();
    if (fieldSelect.value !== 'diagnostics') return text === '' ? Number.NaN : Number(text);
    if (text === 'true' || text === 'false') return text === 'true';
    return text !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
  };

  onSubmit(form, feedback, async () => {
    let condition: Record<string, unknown>;
    const hold = numberOf(forSeconds);
    if (kind.value === 'threshold') {
      const fieldName = fieldSelect.value === 'diagnostics' ? `diagnostics.${diagKey.value.trim()}` : fieldSelect.value;
      condition = { kind: 'threshold', field: fieldName, op: op.value, value: typedValue() };
    } else if (kind.value === 'offline') {
      condition = { kind: 'offline', afterSeconds: numberOf(afterSeconds) ?? Number.NaN };
    } else {
      condition = { kind: 'geofence', geofenceId: geofence.value, when: when.value };
    }
    if (kind.value !== 'offline' && hold !== undefined) condition.forSeconds = hold;
    const body: Record<string, unknown> = { name: name.value.trim(), condition, enabled: enabled.checked };
    const ids = listOf(vehicles.value);
    if (ids.length > 0) body.vehicleIds = ids;
    const rule = await api<Rule>('POST', '/v2/alert-rules', { body });
    name.value = '';
    created();
    return `Created the rule ${rule.name}: ${describeCondition(rule.condition, geofenceNames)}.`;
  });
  return form;
}

