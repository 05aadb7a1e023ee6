import type { EventRecord } from '../events/types.ts';
import type { GeofenceStore, Page } from '../geofences/store.ts';
import type { AlertRecord, AlertRuleRecord, AlertStatus, RuleState } from './model.ts';
import type { TallyRow } from '../reports/rollup.ts';

/** A change to alerts, with its events, written in one transaction. */
export interface AlertChanges {
  /** The organization whose alerts these are: an alert of another one is neither opened nor changed. */
  organizationId: string;
  opened: AlertRecord[];
  /** Alerts to set to `status` (acknowledged or resolved), each only while still `from`. */
  changed: { id: string; from: AlertStatus[]; status: AlertStatus; at: number; by: string }[];
  events: EventRecord[];
}

/** A vehicle's rule state after a commit judged its records, with what that opened or resolved. */
export interface Judged extends AlertChanges {
  vehicleId: string;
  state: RuleState;
  /** Drivers whose identifier a record carried while another drove (or none): each starts an assignment (`source: device`) at `at`. */
  assignments: { driverId: string; at: number }[];
  /** What the records add to the summary rollups: hourly tallies, and hour marks (reports/rollup.ts); empty when meters are off. */
  tallies: TallyRow[];
  marks: { hour: number; state: string }[];
  /** The earliest record older than the newest judged before (it changes the rollups from its day on, by a replay); null when none. */
  late: number | null;
}

/** What a commit reads of a vehicle's drivers for records that carry a `driverIdentifier`. */
export interface DriverContext {
  /** The driver of the vehicle's ongoing assignment. */
  current: string | null;
  /** The driver each identifier of the records names (as stored); an identifier no driver has is absent. */
  byIdentifier: ReadonlyMap<string, string>;
}

/** The identifiers a store looks up for a record's `driverIdentifier`: itself, and an iButton's in the uppercase it is stored in. */
export function identifierForms(identifier: string): string[] {
  return /^[0-9a-f]{16}$/i.test(identifier) && identifier !== identifier.toUpperCase() ? [identifier, identifier.toUpperCase()] : [identifier];
}

/** The distinct `driverIdentifier`s of records, each in the forms a store looks up; empty when none carries one. */
export function identifiersOf(records: readonly { data: Record<string, unknown> }[]): string[] {
  const found = new Set<string>();
  for (const r of records) {
    const identifier = r.data.driverIdentifier;
    if (typeof identifier === 'string') for (const form of identifierForms(identifier)) found.add(form);
  }
  return [...found];
}

/**
 * Alert rules and alerts, beside the geofences they judge (GeofenceStore). Every call names the
 * organization. The rule state of each vehicle is written by the telemetry commit (inside its
 * transaction); GeofenceStore reads it back for the "inside now" queries.
 */
export interface RulesStore extends GeofenceStore {
  /** `quota` (nothing stored) when the organization has `maxPerOrganization` rules already. */
  insertRule(rule: AlertRuleRecord, maxPerOrganization?: number): Promise<'created' | 'quota'>;
  getRule(organizationId: string, id: string): Promise<AlertRuleRecord | undefined>;
  listRules(organizationId: string, page: Page): Promise<{ rules: AlertRuleRecord[]; total: number }>;
  allRules(organizationId: string): Promise<AlertRuleRecord[]>;
  /**
   * A short text that changes when the organization's geofences or rules are added, removed or
   * updated (their count and the sum of their `updatedAt`): the engine's periodic check, cheaper
   * than reading them all again. An update stamped with the very millisecond of the one before
   * it goes unseen; news of changes on the bus is the primary path, this only a safety net.
   */
  definitionsStamp(organizationId: string): Promise<string>;
  replaceRule(rule: AlertRuleRecord): Promise<boolean>;
  deleteRule(organizationId: string, id: string): Promise<boolean>;

  getAlert(organizationId: string, id: string): Promise<AlertRecord | undefined>;
  /** Newest first; `before` is the `seq` cursor of the previous page. */
  listAlerts(
    organizationId: string,
    filter: { statuses?: AlertStatus[]; vehicleId?: string; ruleId?: string; anyOfGroups?: readonly string[]; before?: number; limit: number },
  ): Promise<{ alerts: (AlertRecord & { seq: number })[] }>;
  /**
   * Opens, acknowledges and resolves alerts with their events, in one transaction. An alert that
   * would be a second unresolved one of its rule and vehicle is not opened (and its event not
   * written): the ids of those opened and changed are returned.
   */
  applyAlerts(changes: AlertChanges): Promise<Applied>;
  /**
   * Unresolved alerts of these rules (the offline check reads them), however many rules: the
   * list is never spread into one parameter per rule.
   */
  unresolvedAlerts(organizationId: string, ruleIds: readonly string[]): Promise<AlertRecord[]>;

  /** Organizations that have enabled offline rules (the offline check visits them). */
  organizationsWithOfflineRules(): Promise<string[]>;
  /**
   * Runs `fn` while holding the cluster-wide right to run the offline check (PostgreSQL: an
   * advisory lock; SQLite: one process anyway). False, without running it, when another node holds it.
   */
  asOfflineChecker(fn: () => Promise<void>): Promise<boolean>;
}

/** What the telemetry commit asks of the rules, inside its transaction (see telemetry/store.ts). */
export interface CommitRules {
  /**
   * False when nothing of the organization judges telemetry (no geofences or alert rules, and
   * live trip detection off): the commit then reads and writes no rule state.
   */
  judges(organizationId: string): boolean;
  /** Whether the organization has alert rules: only then does the commit read unresolved alerts. */
  alerts(organizationId: string): boolean;
  /** Whether judging keeps the summary rollups: a vehicle's first records then need its driver (DriverContext). */
  readonly rollups: boolean;
  /**
   * Judges a vehicle's newly stored records (time order) from its state and unresolved alerts;
   * undefined when nothing changed.
   */
  judge(organizationId: string, vehicleId: string, records: readonly { timestamp: number; data: Record<string, unknown> }[],
    state: RuleState | undefined, unresolved: readonly AlertRecord[], at: number, drivers?: DriverContext): Judged | undefined;
}

/** What an alert write did: the alerts opened and changed, and the events written for them. */
export interface Applied {
  opened: string[];
  changed: string[];
  events: EventRecord[];
}

/**
 * The events of changes that happened: geofence events always; an alert's event only if its
 * alert was opened or changed (a second unresolved alert of a rule and vehicle is not opened).
 */
export function happenedEvents(events: readonly EventRecord[], happened: ReadonlySet<string>): EventRecord[] {
  return events.filter((e) => !e.type.startsWith('alert.') || happened.has(String((e.data as { id?: unknown }).id)));
}
