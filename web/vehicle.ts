// One vehicle: its details, latest telemetry (live), a chart of speed and battery over the last
// hours from the history endpoint, its status history, and a control that offers only the status
// changes the transition table allows.
import {
  ApiError,
  api,
  encode,
  explain,
  type History,
  type StatusHistory,
  type TelemetryData,
  type TelemetryRecord,
  type VehicleDetails,
  type Driver,
} from './api.ts';
import { type Chart, createChart, type Sample } from './chart.ts';
import { formatBattery, formatCoord, formatTime, h, replace } from './dom.ts';
import { badge } from './fleet.ts';
import type { Live } from './live.ts';
import { renderCommands } from './commands.ts';
import { renderMeters } from './meters.ts';
import { renderVehicleMaintenance } from './maintenance.ts';
import { renderReplay } from './replay.ts';
import { nextStatuses } from './transitions.ts';

const RANGES = [1, 6, 24, 168];
const MAX_HISTORY_PAGES = 10;

function problemBox(error: unknown): HTMLElement {
  const { title, detail } = explain(error);
  return h('div', { class: 'problem', role: 'alert' }, h('strong', {}, title), detail === '' ? null : h('p', {}, detail));
}

function loading(text: string): HTMLElement {
  return h('p', { class: 'loading', role: 'status' }, text);
}

/** Drivers' names read so far: the details are drawn again on every change of the vehicle. */
const driverNames = new Map<string, string>();

/** The driver of the vehicle's ongoing assignment, by name once read (by id until then, or if it cannot be read). */
function driverLink(driverId: string | null): string | Node {
  if (driverId === null) return '—';
  const link = h('a', { href: '#/drivers', class: 'driver' }, driverNames.get(driverId) ?? driverId);
  if (!driverNames.has(driverId)) {
    void api<Driver>('GET', `/v2/drivers/${encode(driverId)}`).then((driver) => {
      driverNames.set(driverId, driver.name);
      link.textContent = driver.name;
    }).catch(() => undefined);
  }
  return link;
}

function definition(term: string, value: string | Node): HTMLElement[] {
  return [h('dt', {}, term), h('dd', {}, value)];
}

export function renderVehicle(root: HTMLElement, id: string, ctx: { live: Live; tileUrl: string }): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const title = h('h1', { id: 'vehicle-title' }, id);
  const statusBadge = h('span', { class: 'vehicle-status' });
  const details = h('div', { class: 'card' }, loading('Loading vehicle…'));
  const change = h('div', { class: 'card change-status' });
  const latestBox = h('div', { class: 'card latest' }, loading('Loading latest telemetry…'));
  const rangeSelect = h('select', { id: 'chart-range' }, ...RANGES.map((hours) => h('option', { value: hours }, `last ${hours} h`)));
  rangeSelect.value = '6';
  const chartBox = h('div', { class: 'chart', 'aria-hidden': 'true' });
  const chartStatus = h('div', { class: 'chart-status', 'aria-live': 'polite' });
  const caption = h('figcaption', {});
  const historyBox = h('div', { class: 'card' }, loading('Loading status history…'));
  const replayBox = h('section', { class: 'card replay', 'aria-label': 'Route replay' });
  const commandsBox = h('div', { class: 'card' });
  const metersBox = h('div', { class: 'card' });
  const maintenanceBox = h('div', { class: 'card' });

  replace(root,
    h('section', { class: 'vehicle', 'aria-labelledby': 'vehicle-title' },
      h('p', {}, h('a', { href: '#/', class: 'back' }, '← All vehicles')),
      h('header', { class: 'vehicle-header' }, title, statusBadge),
      h('div', { class: 'vehicle-grid' },
        h('section', { 'aria-label': 'Details' }, h('h2', {}, 'Details'), details),
        h('section', { 'aria-label': 'Latest telemetry' }, h('h2', {}, 'Latest telemetry'), latestBox),
        h('section', { 'aria-label': 'Meters' }, h('h2', {}, 'Meters'), metersBox),
        h('section', { 'aria-label': 'Change status' }, h('h2', {}, 'Status'), change)),
      h('section', { class: 'card chart-card', 'aria-label': 'Speed and battery' },
        h('div', { class: 'chart-head' }, h('h2', {}, 'Speed and battery'), h('label', {}, 'Period ', rangeSelect)),
        h('figure', {}, chartBox, caption,
          h('p', { class: 'muted chart-help' }, 'Speed in km/h (left axis), battery in % (right axis). Hover for values, drag across to zoom in, double-click to zoom out.')),
        chartStatus),
      replayBox,
      h('section', { 'aria-label': 'Maintenance' }, h('h2', {}, 'Maintenance'), maintenanceBox),
      h('section', { 'aria-label': 'Commands' }, h('h2', {}, 'Commands'), commandsBox),
      h('section', { 'aria-label': 'Status history' }, h('h2', {}, 'Status history'), historyBox)));

  let vehicle: VehicleDetails | undefined;
  let latest: TelemetryRecord | undefined;
  let samples: Sample[] = [];
  let range = { from: 0, to: 0 };
  const chart: Chart = createChart(chartBox);
  const stopReplay = renderReplay(replayBox, id, { tileUrl: ctx.tileUrl });
  const stopCommands = renderCommands(commandsBox, id);
  const meters = renderMeters(metersBox, id, signal);
  renderVehicleMaintenance(maintenanceBox, id, signal);

  function showDetails(v: VehicleDetails) {
    vehicle = v;
    replace(statusBadge, badge(v.status));
    const config = v.configuration;
    replace(details, h('dl', {},
      ...definition('Type', v.type),
      ...definition('Registered', formatTime(v.createdAt)),
      ...definition('Status since', formatTime(v.statusChangedAt)),
      ...definition('Driver', driverLink(v.driverId)),
      ...definition('Sensors', config.sensors?.join(', ') || '—'),
      ...definition('Capacity', config.capacity === undefined ? '—' : String(config.capacity)),
      ...definition('Autonomy level', config.autonomyLevel === undefined ? '—' : `SAE ${config.autonomyLevel}`)));
    showChangeControl(v.status);
  }

  function showChangeControl(current: string) {
    const allowed = nextStatuses(current);
    if (allowed.length === 0) {
      replace(change, h('p', {}, 'Current status: ', badge(current)), h('p', { class: 'muted' }, 'A retired vehicle keeps its status for good.'));
      return;
    }
    const select = h('select', { id: 'new-status', name: 'status', required: true },
      ...allowed.map((s) => h('option', { value: s }, s)));
    const reason = h('input', { id: 'status-reason', name: 'reason', type: 'text', maxlength: 500, autocomplete: 'off', placeholder: 'optional' });
    const submit = h('button', { type: 'submit', class: 'primary' }, 'Change status');
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const form = h('form', { class: 'status-form', 'aria-label': 'Change status' },
      h('p', {}, 'Current status: ', badge(current)),
      h('label', { for: 'new-status' }, 'New status'), select,
      h('label', { for: 'status-reason' }, 'Reason'), reason,
      submit, feedback);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void (async () => {
        submit.disabled = true;
        replace(feedback, loading('Saving…'));
        try {
          const body: { status: string; reason?: string } = { status: select.value };
          if (reason.value.trim() !== '') body.reason = reason.value.trim();
          const updated = await api<VehicleDetails>('PUT', `/v2/fleet/vehicles/${encode(id)}/status`, { body, signal });
          showDetails(updated);
          void loadHistory();
          const done = change.querySelector('.feedback');
          if (done !== null) replace(done, h('p', { class: 'ok', role: 'status' }, `Status changed to ${updated.status}.`));
        } catch (error) {
          if (signal.aborted) return;
          submit.disabled = false;
          replace(feedback, problemBox(error));
        }
      })();
    });
    replace(change, form);
  }

  function showLatest() {
    if (latest === undefined) {
      replace(latestBox, h('p', { class: 'muted' }, 'No telemetry yet.'));
      return;
    }
    const d: TelemetryData = latest.data;
    replace(latestBox, h('dl', {},
      ...definition('Time', formatTime(latest.timestamp)),
      ...definition('Position', d.location === undefined ? '—' : `${formatCoord(d.location.lat, 'N', 'S')}, ${formatCoord(d.location.lng, 'E', 'W')}`),
      ...definition('Speed', d.speed === undefined ? '—' : `${d.speed.toFixed(1)} km/h`),
      ...definition('Heading', d.heading === undefined ? '—' : `${Math.round(d.heading)}°`),
      ...definition('Battery', formatBattery(d.battery)),
      ...definition('Temperature', d.temperature === undefined ? '—' : `${d.temperature.toFixed(1)} °C`),
      ...definition('Odometer', d.odometer === undefined ? '—' : `${d.odometer.toFixed(1)} km`),
      ...definition('Ignition', d.ignition === undefined ? '—' : d.ignition ? 'on' : 'off'),
      ...definition('Driver identifier', d.driverIdentifier ?? '—')));
  }

  function redraw(reset = false) {
    chart.setData(samples, reset);
    const speeds = samples.filter((s) => s.speed !== undefined).length;
    const batteries = samples.filter((s) => s.battery !== undefined).length;
    const from = samples[0]?.at ?? range.from;
    const to = samples.at(-1)?.at ?? range.to;
    caption.textContent = `${speeds} speed and ${batteries} battery readings from ${formatTime(new Date(from).toISOString())} to ${formatTime(new Date(to).toISOString())}.`;
  }

  async function loadVehicle(): Promise<VehicleDetails | undefined> {
    try {
      const vehicle = await api<VehicleDetails>('GET', `/v2/fleet/vehicles/${encode(id)}`, { signal });
      showDetails(vehicle);
      return vehicle;
    } catch (error) {
      if (signal.aborted) return undefined;
      replace(details, problemBox(error));
      replace(change);
      return undefined;
    }
  }

  async function loadLatest() {
    try {
      latest = await api<TelemetryRecord>('GET', `/v2/telemetry/${encode(id)}`, { signal });
      showLatest();
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.code === 'no-telemetry') showLatest();
      else replace(latestBox, problemBox(error));
    }
  }

  let chartToken = 0;
  async function loadChart() {
    const token = ++chartToken;
    const hours = Number(rangeSelect.value);
    const to = Date.now();
    range = { from: to - hours * 3_600_000, to };
    replace(chartStatus, loading('Loading history…'));
    const collected: Sample[] = [];
    try {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
        const result: History = await api<History>('GET', `/v2/telemetry/${encode(id)}/history`, {
          query: { from: new Date(range.from).toISOString(), fields: 'speed,battery', limit: 10_000, cursor },
          signal,
        });
        for (const record of result.records) {
          if (record.data.speed === undefined && record.data.battery === undefined) continue;
          const sample: Sample = { at: Date.parse(record.timestamp) };
          if (record.data.speed !== undefined) sample.speed = record.data.speed;
          if (record.data.battery !== undefined) sample.battery = record.data.battery;
          collected.push(sample);
        }
        if (result.nextCursor === null) break;
        cursor = result.nextCursor;
      }
      if (token !== chartToken) return;
      samples = collected;
      replace(chartStatus);
      redraw(true);
    } catch (error) {
      if (signal.aborted || token !== chartToken) return;
      replace(chartStatus, problemBox(error));
    }
  }

  async function loadHistory() {
    try {
      const result = await api<StatusHistory>('GET', `/v2/fleet/vehicles/${encode(id)}/status-history`, { query: { limit: 50 }, signal });
      replace(historyBox, h('table', { class: 'history', 'aria-label': 'Status changes, newest first' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col' }, 'From'), h('th', { scope: 'col' }, 'To'),
          h('th', { scope: 'col' }, 'Reason'), h('th', { scope: 'col' }, 'By'))),
        h('tbody', {}, ...result.history.map((entry) => h('tr', {},
          h('td', {}, formatTime(entry.at)), h('td', {}, entry.from === null ? '—' : badge(entry.from)), h('td', {}, badge(entry.to)),
          h('td', {}, entry.reason ?? ''), h('td', { class: 'muted' }, entry.by))))),
        result.total > result.history.length ? h('p', { class: 'muted' }, `Newest ${result.history.length} of ${result.total} changes.`) : null);
    } catch (error) {
      if (signal.aborted) return;
      replace(historyBox, problemBox(error));
    }
  }

  rangeSelect.addEventListener('change', () => void loadChart());

  const unsubscribe = ctx.live.onMessage((msg) => {
    if (msg.vehicleId !== id) return;
    if (msg.type === 'status') {
      if (vehicle !== undefined && vehicle.status !== msg.data.to) {
        vehicle = { ...vehicle, status: msg.data.to };
        replace(statusBadge, badge(msg.data.to));
        showChangeControl(msg.data.to);
        void loadHistory();
      }
      return;
    }
    const base: TelemetryRecord = latest ?? { vehicleId: id, timestamp: msg.timestamp, data: {} };
    latest = {
      ...base,
      timestamp: msg.timestamp > base.timestamp ? msg.timestamp : base.timestamp,
      data: { ...base.data, ...msg.data },
    };
    showLatest();
    meters.refresh();
    if (msg.data.speed !== undefined || msg.data.battery !== undefined) {
      const sample: Sample = { at: Date.parse(msg.timestamp) };
      if (msg.data.speed !== undefined) sample.speed = msg.data.speed;
      if (msg.data.battery !== undefined) sample.battery = msg.data.battery;
      samples = [...samples, sample].sort((a, b) => a.at - b.at);
      range = { from: range.from, to: Math.max(range.to, sample.at) };
      redraw();
    }
  });

  // A vehicle that has sent nothing yet has no latest state to ask for (the answer would be a 404
  // in the browser's console); its first record arrives on the live stream.
  void loadVehicle().then((vehicle) => {
    if (vehicle === undefined) return;
    if (vehicle.lastUpdate === null) showLatest();
    else void loadLatest();
  });
  void loadChart();
  void loadHistory();

  return () => {
    controller.abort();
    unsubscribe();
    chart.destroy();
    stopReplay();
    stopCommands();
  };
}
