// A vehicle's meters (docs/API.md "Meters"): its odometer and engine hours as the service keeps
// them from its records, read again a while after its latest telemetry changes, and a form
// that sets them (a reading from the dashboard, a service visit) for those who may.
import { api, encode, offers, type VehicleMeters } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { field, loading, numberOf, onSubmit, problemBox, uid } from './forms.ts';

const number = (value: number, digits: number) => value.toLocaleString('en', { maximumFractionDigits: digits });

export function renderMeters(root: HTMLElement, vehicleId: string, signal: AbortSignal): { refresh(): void } {
  const url = `/v2/fleet/vehicles/${encode(vehicleId)}/meters`;
  const values = h('div', {}, loading('Loading meters…'));
  replace(root, values);

  function show(m: VehicleMeters) {
    replace(values, h('dl', { class: 'meters' },
      h('dt', {}, 'Odometer'), h('dd', { 'data-meter': 'odometer' }, `${number(m.odometerKm, 1)} km`),
      h('dt', {}, 'Engine hours'), h('dd', { 'data-meter': 'engine' }, `${number(m.engineHours, 1)} h`),
      h('dt', {}, 'Updated'), h('dd', {}, m.updatedAt === null ? '—' : formatTime(m.updatedAt))));
  }

  if (offers('fleet:write')) {
    const odometer = h('input', { id: uid('meter-odometer'), type: 'number', min: 0, step: 'any', inputmode: 'decimal' });
    const engine = h('input', { id: uid('meter-engine'), type: 'number', min: 0, step: 'any', inputmode: 'decimal' });
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const form = h('form', { class: 'meters-form', 'aria-label': 'Set meters', novalidate: true },
      field(odometer, { label: 'Odometer now (km)', path: '/odometerKm' }),
      field(engine, { label: 'Engine hours now', path: '/engineHours' }),
      h('button', { type: 'submit' }, 'Set meters'), feedback);
    onSubmit(form, feedback, async () => {
      const body: { odometerKm?: number; engineHours?: number } = {};
      const km = numberOf(odometer);
      const hours = numberOf(engine);
      if (km !== undefined) body.odometerKm = km;
      if (hours !== undefined) body.engineHours = hours;
      show(await api<VehicleMeters>('PUT', url, { body, signal }));
      odometer.value = '';
      engine.value = '';
      return 'Meters set; later records add to them.';
    });
    root.append(h('details', {}, h('summary', {}, 'Set meters'), form));
  }

  let reading = false;
  async function refresh() {
    if (reading) return;
    reading = true;
    try {
      show(await api<VehicleMeters>('GET', url, { signal }));
    } catch (error) {
      if (!signal.aborted) replace(values, problemBox(error));
    } finally {
      reading = false;
    }
  }
  void refresh();
  // New telemetry comes as often as every second: the meters are read again at most every 5 s.
  let pending: ReturnType<typeof setTimeout> | undefined;
  signal.addEventListener('abort', () => clearTimeout(pending));
  return {
    refresh() {
      pending ??= setTimeout(() => {
        pending = undefined;
        void refresh();
      }, 5000);
    },
  };
}
