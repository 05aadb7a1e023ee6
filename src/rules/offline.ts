// The offline check: by the service's clock, a vehicle that has sent no telemetry for a rule's
// `afterSeconds` gets an alert. It runs on one node at a time (the store decides: an advisory lock
// on PostgreSQL), every few seconds and once at start, so a vehicle that went silent while the
// service was down is caught up. Only `active` vehicles are judged: an inactive, retired or
// maintained vehicle is expected to be quiet, and a vehicle that never sent telemetry was never online.
import type { Clock } from '../clock.ts';
import type { EventPort } from '../events/port.ts';
import type { EventRecord } from '../events/types.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import { alertEvent, openAlert } from './engine.ts';
import { type AlertRecord, appliesTo } from './model.ts';
import type { RulesStore } from './store.ts';

const PAGE = 1000;

export function startOfflineChecks(deps: {
  store: RulesStore;
  vehicles: VehicleStore;
  /** When the vehicle's newest telemetry was recorded (ms), if it has any. */
  lastTelemetry(organizationId: string, vehicleId: string): number | undefined;
  clock: Clock;
  /** Told of the alerts' events (`recorded`). */
  events: EventPort;
  log: { warn(obj: object, msg: string): void };
  intervalMs?: number;
}) {
  let running: Promise<void> | undefined;

  async function checkOrganization(organizationId: string): Promise<void> {
    const rules = (await deps.store.allRules(organizationId)).filter((r) => r.enabled && r.condition.kind === 'offline');
    if (rules.length === 0) return;
    const open = new Set((await deps.store.unresolvedAlerts(organizationId, rules.map((r) => r.id))).map((a) => `${a.ruleId}\n${a.vehicleId}`));
    const now = deps.clock.now();
    const opened: AlertRecord[] = [];
    const events: EventRecord[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const { vehicles } = await deps.vehicles.list(organizationId, { statuses: ['active'], limit: PAGE, offset });
      for (const vehicle of vehicles) {
        const last = deps.lastTelemetry(organizationId, vehicle.id);
        if (last === undefined) continue;
        for (const rule of rules) {
          if (rule.condition.kind !== 'offline' || !appliesTo(rule.vehicleIds, vehicle.id)) continue;
          if (now - last < rule.condition.afterSeconds * 1000 || open.has(`${rule.id}\n${vehicle.id}`)) continue;
          const alert = openAlert(rule, vehicle.id, now, new Date(last).toISOString());
          opened.push(alert);
          events.push(alertEvent('alert.opened', alert, now));
        }
      }
      if (vehicles.length < PAGE) break;
    }
    if (opened.length === 0) return;
    const applied = await deps.store.applyAlerts({ organizationId, opened, changed: [], events });
    deps.events.emit('recorded', { events: applied.events });
  }

  function runOnce(): Promise<void> {
    running ??= (async () => {
      try {
        await deps.store.asOfflineChecker(async () => {
          for (const organizationId of await deps.store.organizationsWithOfflineRules()) {
            // One organization whose check fails (its data, a statement too large) does not keep
            // the others' alerts from opening.
            try {
              await checkOrganization(organizationId);
            } catch (error) {
              deps.log.warn({ err: error, organizationId }, 'alerts: the offline check of an organization failed; it runs again shortly');
            }
          }
        });
      } catch (error) {
        deps.log.warn({ err: error }, 'alerts: the offline check failed; it runs again shortly');
      } finally {
        running = undefined;
      }
    })();
    return running;
  }

  const timer = setInterval(() => void runOnce(), deps.intervalMs ?? 15_000);
  timer.unref();
  return { runOnce, stop: () => clearInterval(timer) };
}
