// Reports: how far the vehicles went, how long they drove, idled and ran their engines, how many
// trips they made and their top speed, summed per vehicle, per driver or per date over a range of
// dates in a time zone (docs/API.md "Summary reports"). The rows as a table, a chart of them by
// date, and the same report as a CSV file; below, the report schedules (report-schedules.ts).
import { api, download, type Driver, encode, offers, readAll, type SummaryReport, type SummaryRow, type VehicleGroup } from './api.ts';
import { createDailyChart, type DailyChart } from './chart.ts';
import { renderReportSchedules } from './report-schedules.ts';
import { addDays, dateRangeText, h, replace } from './dom.ts';
import { field, onSubmit, panelHeader, problemBox, select } from './forms.ts';

const GROUP_BY = ['vehicle', 'driver', 'day'] as const;
type GroupBy = (typeof GROUP_BY)[number];
const GROUP_BY_TEXT: Record<GroupBy, string> = { vehicle: 'Vehicle', driver: 'Driver', day: 'Day' };
const KEY_HEADER: Record<GroupBy, string> = { vehicle: 'Vehicle', driver: 'Driver', day: 'Date' };
const NOUNS: Record<GroupBy, [string, string]> = { vehicle: ['vehicle', 'vehicles'], driver: ['driver', 'drivers'], day: ['date', 'dates'] };
const COLUMNS = ['Distance (km)', 'Driving (h:mm)', 'Idle (h:mm)', 'Engine hours', 'Trips', 'Max speed (km/h)'];

/** Time zones offered as suggestions (any IANA name may be typed). */
const COMMON_ZONES = [
  'UTC', 'Europe/London', 'Europe/Dublin', 'Europe/Lisbon', 'Europe/Paris', 'Europe/Berlin', 'Europe/Madrid', 'Europe/Rome', 'Europe/Amsterdam',
  'Europe/Stockholm', 'Europe/Warsaw', 'Europe/Athens', 'Europe/Helsinki', 'Europe/Istanbul', 'Europe/Moscow', 'Africa/Cairo', 'Africa/Lagos',
  'Africa/Johannesburg', 'Asia/Dubai', 'Asia/Kolkata', 'Asia/Singapore', 'Asia/Shanghai', 'Asia/Tokyo', 'Australia/Sydney', 'Pacific/Auckland',
  'America/Sao_Paulo', 'America/Mexico_City', 'America/New_York', 'America/Toronto', 'America/Chicago', 'America/Denver', 'America/Los_Angeles',
];

/** The browser's own time zone. */
function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Today's date (`YYYY-MM-DD`) in `zone` (the browser's own when it is not one). */
function today(zone: string, now = new Date()): string {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  } catch {
    parts = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  }
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/** Seconds as hours and minutes: "2:05". */
function hoursMinutes(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
}

const fixed = (value: number, digits: number) => value.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const speedText = (speed: number | null) => (speed === null ? '—' : speed.toLocaleString('en', { maximumFractionDigits: 1 }));

/** The query of a report, as the form asked for it. */
interface Query {
  from: string;
  to: string;
  timezone: string;
  groupBy: GroupBy;
  groupId: string | undefined;
}

export function renderReports(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;

  const zone = browserZone();
  const to = today(zone);
  const fromInput = h('input', { type: 'date', required: true, value: addDays(to, -7) });
  const toInput = h('input', { type: 'date', required: true, value: to });
  const zones = h('datalist', { id: 'report-zones' },
    ...[...new Set([zone, ...COMMON_ZONES])].map((z) => h('option', { value: z })));
  const zoneInput = h('input', { type: 'text', list: zones.id, autocomplete: 'off', spellcheck: 'false', value: zone });
  const groupBy = select(GROUP_BY, { labels: GROUP_BY_TEXT });
  const groupSelect = select([], { placeholder: 'Every vehicle' });
  const groupField = field(groupSelect, { label: 'Vehicle group', path: '/groupId', help: 'Only the vehicles of one group.' });
  groupField.hidden = true;
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const form = h('form', { class: 'card report-filters', 'aria-label': 'Summary report', 'data-fields-in': 'query', novalidate: true },
    field(fromInput, { label: 'From', path: '/from', help: 'The first date counted.' }),
    field(toInput, { label: 'To', path: '/to', help: 'The date the report ends before (not counted).' }),
    field(zoneInput, { label: 'Time zone', path: '/timezone', help: 'An IANA name; the dates are days of this zone.' }),
    field(groupBy, { label: 'Group by', path: '/groupBy' }),
    groupField,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Run report')),
    feedback, zones);

  const summary = h('p', { class: 'muted report-summary', role: 'status' }, 'Choose the dates and run the report.');
  const downloadButton = h('button', { type: 'button', disabled: true }, 'Download CSV');
  const downloadState = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const chartBox = h('div', { class: 'chart', 'aria-hidden': 'true' });
  const caption = h('figcaption', {});
  const figure = h('figure', { class: 'card chart-card', 'aria-label': 'Distance and driving time by date', hidden: true },
    chartBox, caption,
    h('p', { class: 'muted chart-help' }, 'Distance in km (bars, left axis), driving time in hours (line, right axis). Hover for values.'));
  const keyHeader = h('th', { scope: 'col' }, KEY_HEADER.vehicle);
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table report-table', 'aria-label': 'Summary report rows' },
    h('thead', {}, h('tr', {}, keyHeader, ...COLUMNS.map((t) => h('th', { scope: 'col', class: 'num' }, t)))), tbody);
  const results = h('section', { class: 'report-results', 'aria-labelledby': 'report-results-title', hidden: true },
    h('div', { class: 'card-head' }, h('h2', { id: 'report-results-title' }, 'Summary'), downloadButton),
    summary, downloadState, figure, h('div', { class: 'table-wrap' }, table));

  const schedulesBox = h('section', { class: 'report-schedules', 'aria-labelledby': 'report-schedules-title' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'reports-title' },
    ...panelHeader('Reports', 'reports-title',
      'Distance, driving and idle time, engine hours, trips and top speed, summed per vehicle, per driver or per date over a range of dates. '
      + 'A date is a day of the time zone chosen; the range runs from the first date up to the last, which is not counted.'),
    form, results, schedulesBox));

  const chart: DailyChart = createDailyChart(chartBox);
  /** The query of the report on show: what the CSV download asks for. */
  let shown: Query | undefined;
  let token = 0;

  /** Drivers' names by id, for a report by driver; without them (not readable), their ids. */
  async function driverNames(): Promise<Map<string, string>> {
    if (!offers('fleet:read')) return new Map();
    try {
      return new Map((await readAll<Driver>('/v2/drivers', 'drivers', signal)).map((d) => [d.id, d.name]));
    } catch {
      return new Map();
    }
  }

  function keyCell(row: SummaryRow, by: GroupBy, drivers: Map<string, string>): HTMLElement {
    if (by === 'vehicle') {
      const id = row.vehicleId ?? '';
      return h('th', { scope: 'row' }, h('a', { href: `#/vehicles/${encode(id)}` }, id));
    }
    if (by === 'driver') {
      const id = row.driverId ?? '';
      const name = drivers.get(id);
      return h('th', { scope: 'row', title: id }, name ?? id);
    }
    return h('th', { scope: 'row' }, h('time', { datetime: row.date ?? '' }, row.date ?? ''));
  }

  function rowOf(row: SummaryRow, by: GroupBy, drivers: Map<string, string>): HTMLElement {
    const key = row.vehicleId ?? row.driverId ?? row.date ?? '';
    return h('tr', { 'data-key': key },
      keyCell(row, by, drivers),
      h('td', { class: 'num' }, fixed(row.distanceKm, 1)),
      h('td', { class: 'num' }, hoursMinutes(row.drivingSeconds)),
      h('td', { class: 'num' }, hoursMinutes(row.idleSeconds)),
      h('td', { class: 'num' }, fixed(row.engineHours, 2)),
      h('td', { class: 'num' }, row.trips),
      h('td', { class: 'num' }, speedText(row.maxSpeed)));
  }

  function show(query: Query, rows: SummaryRow[], drivers: Map<string, string>) {
    shown = query;
    const by = query.groupBy;
    keyHeader.textContent = KEY_HEADER[by];
    replace(tbody, ...rows.map((row) => rowOf(row, by, drivers)));
    const [one, many] = NOUNS[by];
    const range = `${dateRangeText(query.from, query.to)} (${query.timezone})`;
    summary.className = rows.length === 0 ? 'empty report-summary' : 'muted report-summary';
    summary.textContent = rows.length === 0
      ? `Nothing was counted in ${range}.`
      : `${rows.length} ${rows.length === 1 ? one : many}, ${range}.`;
    results.hidden = false;
    downloadButton.disabled = false;
    replace(downloadState);
    figure.hidden = by !== 'day' || rows.length === 0;
    if (by === 'day') {
      const distance = rows.reduce((sum, r) => sum + r.distanceKm, 0);
      const driving = rows.reduce((sum, r) => sum + r.drivingSeconds, 0);
      chart.setData(rows.map((r) => ({ date: r.date ?? '', distanceKm: r.distanceKm, drivingHours: r.drivingSeconds / 3600 })));
      caption.textContent = `Distance and driving time on ${rows.length} ${rows.length === 1 ? 'date' : 'dates'}: `
        + `${fixed(distance, 1)} km and ${hoursMinutes(driving)} of driving in all.`;
    }
  }

  onSubmit(form, feedback, async () => {
    const mine = ++token;
    const query: Query = {
      from: fromInput.value,
      to: toInput.value,
      timezone: zoneInput.value.trim(),
      groupBy: groupBy.value as GroupBy,
      groupId: groupSelect.value === '' ? undefined : groupSelect.value,
    };
    table.setAttribute('aria-busy', 'true');
    try {
      const report = await api<SummaryReport>('GET', '/v2/reports/summary', { query: { ...query }, signal });
      const drivers = query.groupBy === 'driver' ? await driverNames() : new Map<string, string>();
      if (mine === token) show(query, report.rows, drivers);
    } catch (error) {
      // A report that failed leaves nothing on show that the form no longer asks for.
      if (mine === token) {
        shown = undefined;
        results.hidden = true;
      }
      throw error;
    } finally {
      if (mine === token) table.removeAttribute('aria-busy');
    }
  });

  downloadButton.addEventListener('click', () => {
    if (shown === undefined) return;
    const query = shown;
    downloadButton.disabled = true;
    replace(downloadState, h('p', { class: 'loading', role: 'status' }, 'Preparing the CSV file…'));
    void download('/v2/reports/summary', { ...query, format: 'csv' }, `summary_${query.groupBy}_${query.from}_${query.to}.csv`, signal)
      .then((name) => replace(downloadState, h('p', { class: 'ok', role: 'status' }, `Downloaded ${name}.`)))
      .catch((error: unknown) => {
        if (!signal.aborted) replace(downloadState, problemBox(error));
      })
      .finally(() => {
        downloadButton.disabled = false;
      });
  });

  // The group filter, for those who may read the groups (a key is offered it; a refusal leaves it hidden).
  const groups = offers('fleet:read') ? readAll<VehicleGroup>('/v2/groups', 'groups', signal).catch(() => []) : Promise.resolve([]);
  void groups.then((list) => {
    if (list.length === 0) return;
    replace(groupSelect, h('option', { value: '' }, 'Every vehicle'), ...list.map((g) => h('option', { value: g.id }, g.name)));
    groupField.hidden = false;
  });
  renderReportSchedules(schedulesBox, { signal, groups, zone, zones: zones.id });

  return () => {
    controller.abort();
    chart.destroy();
  };
}
