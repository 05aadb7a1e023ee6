// Report schedules, on the Reports page: each schedule's summary report of every day, week or
// month, made by the service once the period has ended, and the reports it keeps (90 days), each
// downloadable as the file it was made as (docs/API.md "Report schedules"). Everyone who may read
// reports sees the schedules; adding, running and deleting one needs the `rules` scope, and a
// person limited to vehicle groups does not read the kept reports (they are the whole organization's).
import {
  api, download, encode, type KeptReport, type KeptReportList, limitedToGroups, offers, type ReportSchedule, type ReportScheduleList,
  type VehicleGroup,
} from './api.ts';
import { dateRangeText, formatTime, h, replace } from './dom.ts';
import { act, confirmButton, field, fillTable, onSubmit, select } from './forms.ts';

const GROUP_BY_TEXT: Record<string, string> = { vehicle: 'Vehicle', driver: 'Driver', day: 'Day' };
const PERIOD_TEXT: Record<string, string> = { day: 'Day', week: 'Week (Monday to Sunday)', month: 'Month' };
const FORMAT_TEXT: Record<string, string> = { csv: 'CSV', json: 'JSON' };

export interface ScheduleContext {
  signal: AbortSignal;
  /** The organization's groups (empty when they may not be read). */
  groups: Promise<VehicleGroup[]>;
  /** The time zone a new schedule starts with, and the id of the datalist of zones to suggest. */
  zone: string;
  zones: string;
}

export function renderReportSchedules(root: HTMLElement, ctx: ScheduleContext): void {
  const { signal } = ctx;
  const writable = offers('rules');
  const readsReports = !limitedToGroups();

  // Add a schedule.
  const name = h('input', { type: 'text', autocomplete: 'off' });
  const groupBy = select(Object.keys(GROUP_BY_TEXT), { labels: GROUP_BY_TEXT });
  const period = select(Object.keys(PERIOD_TEXT), { labels: PERIOD_TEXT });
  const timezone = h('input', { type: 'text', list: ctx.zones, autocomplete: 'off', spellcheck: 'false', value: ctx.zone });
  const format = select(Object.keys(FORMAT_TEXT), { labels: FORMAT_TEXT });
  const groupSelect = select([], { placeholder: 'Every vehicle' });
  const groupField = field(groupSelect, { label: 'Vehicle group (optional)', path: '/groupId' });
  groupField.hidden = true;
  const formFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const form = h('form', { class: 'card form', 'aria-labelledby': 'report-schedule-title', novalidate: true },
    h('h3', { id: 'report-schedule-title' }, 'Add a report schedule'),
    field(name, { label: 'Name', path: '/name' }),
    field(groupBy, { label: 'Group by', path: '/groupBy' }),
    field(period, { label: 'Period', path: '/period', help: 'Each report covers one; it is made an hour after the period ends.' }),
    field(timezone, { label: 'Time zone', path: '/timezone', help: 'An IANA name; the periods are days of this zone.' }),
    field(format, { label: 'Format', path: '/format' }),
    groupField,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Add schedule')),
    formFeedback);

  const schedulesFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const schedulesState = h('div', { class: 'feedback' });
  const schedulesTable = h('table', { class: 'manage-table', 'aria-label': 'Report schedules' },
    h('thead', {}, h('tr', {}, ...['Name', 'Group by', 'Period', 'Time zone', 'Format', 'Vehicles', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody'));

  const reportsTitle = h('h3', { id: 'kept-reports-title' }, 'Kept reports');
  const reportsNote = h('p', { class: 'muted' }, 'Choose a schedule\'s "Reports" to list the reports it has made.');
  const reportsFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const reportsState = h('div', { class: 'feedback' });
  const reportsTable = h('table', { class: 'manage-table', 'aria-label': 'Kept reports', hidden: true },
    h('thead', {}, h('tr', {}, ...['Period', 'Made', 'Format', 'Content'].map((t) => h('th', { scope: 'col' }, t)))), h('tbody'));
  const reportsSection = h('section', { 'aria-labelledby': reportsTitle.id },
    reportsTitle, reportsNote, reportsFeedback, reportsState, h('div', { class: 'table-wrap' }, reportsTable));

  replace(root,
    h('h2', { id: 'report-schedules-title' }, 'Report schedules'),
    h('p', { class: 'muted intro' }, 'A schedule makes the summary report of every day, week or month once it has ended, and keeps it 90 days.'),
    h('div', { class: 'manage-layout' },
      writable ? h('div', { class: 'manage-forms' }, form) : null,
      h('div', { class: 'manage-list' }, schedulesFeedback, schedulesState, h('div', { class: 'table-wrap' }, schedulesTable),
        readsReports ? reportsSection : null)));

  let groupNames = new Map<string, string>();
  /** The schedule whose kept reports are listed. */
  let selected: ReportSchedule | undefined;

  function appliesTo(s: ReportSchedule): string {
    if (s.vehicleIds !== null) return s.vehicleIds.join(', ');
    if (s.groupId !== null) return `group ${groupNames.get(s.groupId) ?? s.groupId}`;
    return 'every vehicle';
  }

  function loadSchedules() {
    return fillTable(schedulesTable, schedulesState, signal, async () => {
      const list = await api<ReportScheduleList>('GET', '/v2/report-schedules', { query: { limit: 1000 }, signal });
      return { items: list.schedules, total: list.total };
    }, scheduleRow, { empty: writable ? 'No report schedules yet: add one.' : 'No report schedules yet.', noun: 'schedules' });
  }

  function scheduleRow(s: ReportSchedule): HTMLElement {
    const reports = readsReports ? h('button', { type: 'button', 'aria-label': `Reports of ${s.name}` }, 'Reports') : null;
    reports?.addEventListener('click', () => void showReports(s));
    const run = writable ? h('button', { type: 'button', 'aria-label': `Run ${s.name} now` }, 'Run now') : null;
    run?.addEventListener('click', () => void act(run, schedulesFeedback, async () => {
      const made = await api<KeptReport>('POST', `/v2/report-schedules/${encode(s.id)}/run`);
      if (readsReports) void showReports(s);
      return `Made the report of ${dateRangeText(made.period.from, made.period.to)} for ${s.name}.`;
    }));
    const remove = writable ? confirmButton('Delete', schedulesFeedback, async () => {
      await api('DELETE', `/v2/report-schedules/${encode(s.id)}`);
      void loadSchedules();
      return `Deleted ${s.name}; the reports it made are kept until they are 90 days old.`;
    }) : null;
    return h('tr', { 'data-schedule-id': s.id, class: selected?.id === s.id ? 'selected' : null },
      h('th', { scope: 'row' }, s.name),
      h('td', {}, GROUP_BY_TEXT[s.groupBy] ?? s.groupBy),
      h('td', {}, PERIOD_TEXT[s.period] ?? s.period),
      h('td', {}, s.timezone),
      h('td', {}, FORMAT_TEXT[s.format] ?? s.format),
      h('td', {}, appliesTo(s)),
      h('td', { class: 'actions' }, reports, run, remove));
  }

  function showReports(s: ReportSchedule) {
    selected = s;
    for (const row of schedulesTable.tBodies[0]!.rows) row.classList.toggle('selected', row.dataset.scheduleId === s.id);
    reportsTitle.textContent = `Kept reports of ${s.name}`;
    reportsNote.hidden = true;
    reportsTable.hidden = false;
    replace(reportsFeedback);
    return fillTable(reportsTable, reportsState, signal, async () => {
      const list = await api<KeptReportList>('GET', '/v2/reports', { query: { scheduleId: s.id, limit: 100 }, signal });
      return { items: list.reports, total: list.total };
    }, reportRow, { empty: 'No reports yet: the first is made when a period has ended, or with "Run now".', noun: 'reports' });
  }

  function reportRow(r: KeptReport): HTMLElement {
    const range = dateRangeText(r.period.from, r.period.to);
    const get = h('button', { type: 'button', 'aria-label': `Download the report of ${range}` }, 'Download');
    get.addEventListener('click', () => void act(get, reportsFeedback, async () => {
      const file = await download(r.url, {}, `report_${r.id}.${r.format}`, signal);
      return `Downloaded ${file}.`;
    }));
    return h('tr', { 'data-report-id': r.id },
      h('th', { scope: 'row' }, range),
      h('td', {}, h('time', { datetime: r.createdAt }, formatTime(r.createdAt))),
      h('td', {}, FORMAT_TEXT[r.format] ?? r.format),
      h('td', { class: 'actions' }, get));
  }

  onSubmit(form, formFeedback, async () => {
    const body: Record<string, unknown> = {
      name: name.value.trim(), groupBy: groupBy.value, period: period.value, timezone: timezone.value.trim(), format: format.value,
    };
    if (groupSelect.value !== '') body.groupId = groupSelect.value;
    const made = await api<ReportSchedule>('POST', '/v2/report-schedules', { body });
    name.value = '';
    void loadSchedules();
    return `Added ${made.name}.`;
  });

  void ctx.groups.then((groups) => {
    groupNames = new Map(groups.map((g) => [g.id, g.name]));
    if (groups.length > 0) {
      replace(groupSelect, h('option', { value: '' }, 'Every vehicle'), ...groups.map((g) => h('option', { value: g.id }, g.name)));
      groupField.hidden = false;
    }
  }).catch(() => undefined).finally(() => {
    // After the groups, so that a schedule's group is shown by its name.
    if (!signal.aborted) void loadSchedules();
  });
}
