// Every store the service uses, as one bundle handed to app.ts. Each backend (SQLite embedded,
// PostgreSQL for cluster mode) provides the same bundle, and test/contract/ holds both to it.
import type { Logger } from 'pino';
import type { RollupStore } from '../reports/store.ts';
import type { AuditStore } from '../audit/store.ts';
import type { CommandStore } from '../commands/store.ts';
import type { GroupStore } from '../groups/store.ts';
import type { DriverStore } from '../drivers/store.ts';
import type { OAuthStore } from '../auth/oauth/store.ts';
import type { AuthStore } from '../auth/store.ts';
import type { Config } from '../config.ts';
import type { EventStore } from '../events/store.ts';
import type { PeopleStore } from '../people/store.ts';
import type { MeterStore } from '../meters/store.ts';
import type { MaintenanceStore } from '../maintenance/store.ts';
import type { ReportScheduleStore } from '../reports/schedules/store.ts';
import type { RulesStore } from '../rules/store.ts';
import type { SsoStore } from '../sso/store.ts';
import type { DeviceStore } from '../devices/store.ts';
import type { TelemetryStore } from '../telemetry/store.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { WebhookStore } from '../webhooks/store.ts';
import { createPostgresStores } from './postgres/index.ts';
import { createSqliteStores } from './sqlite/index.ts';

export interface Stores {
  auth: AuthStore;
  oauth: OAuthStore;
  vehicles: VehicleStore;
  telemetry: TelemetryStore;
  events: EventStore;
  rules: RulesStore;
  webhooks: WebhookStore;
  devices: DeviceStore;
  people: PeopleStore;
  sso: SsoStore;
  audit: AuditStore;
  groups: GroupStore;
  drivers: DriverStore;
  commands: CommandStore;
  meters: MeterStore;
  rollups: RollupStore;
  maintenance: MaintenanceStore;
  reportSchedules: ReportScheduleStore;
  /** Throws when the backend cannot answer; /readyz reports it. */
  ping(): Promise<void>;
  /** PostgreSQL with FLEET_DATABASE_READ_URL: where the reads that may lag go, and the replica's lag. */
  replica?: { onReplica(): boolean; lagMs(): number | undefined };
  close(): Promise<void>;
}

/** The configured backend's stores, migrated and ready; throws when PostgreSQL cannot be reached. */
export async function openStores(config: Pick<Config, 'database' | 'telemetry'>, log?: Pick<Logger, 'info' | 'warn'>): Promise<Stores> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return createSqliteStores(database.path);
    case 'postgres': {
      const { read } = database;
      // Reads on the replica are the rule; going back to the primary is worth a warning.
      const onChange = (onReplica: boolean, reason: string) => (onReplica
        ? log?.info({ reason }, 'reads go to the replica (FLEET_DATABASE_READ_URL)')
        : log?.warn({ reason }, 'reads go to the primary: the replica is behind or unreachable'));
      return createPostgresStores({
        url: database.url, poolSize: database.poolSize, keepDays: config.telemetry.retentionDays,
        ...(read === undefined ? {} : { read: { ...read, onChange } }),
      });
    }
  }
}
