// The PostgreSQL backend (cluster mode): the same store interfaces as SQLite, over one pool.
import type { Stores } from '../stores.ts';
import { createPostgresAuthStore } from './auth.ts';
import { createPostgresEventStore } from './events.ts';
import { createPostgresMeterStore, createPostgresRulesStore } from './rules.ts';
import { createPostgresMaintenanceStore } from './maintenance.ts';
import { createPostgresReportScheduleStore } from './report-schedules.ts';
import { createPostgresRollupStore } from './rollups.ts';
import { createPostgresWebhookStore } from './webhooks.ts';
import { createPostgresDeviceStore } from './devices.ts';
import { type Database, type PostgresOptions, migrate, openPostgres } from './database.ts';
import { createPostgresOAuthStore } from './oauth.ts';
import { createPostgresAuditStore } from './audit.ts';
import { createPostgresCommandStore } from './commands.ts';
import { createPostgresGroupStore } from './groups.ts';
import { createPostgresDriverStore } from './drivers.ts';
import { createPostgresPeopleStore } from './people.ts';
import { createPostgresSsoStore } from './sso.ts';
import { createPostgresTelemetryStore } from './telemetry.ts';
import { type ReadRouter, type ReplicaOptions, readRouter } from './replica.ts';
import { createPostgresVehicleStore } from './vehicles.ts';

export interface PostgresStoresOptions extends PostgresOptions {
  /** Telemetry is kept this many days (FLEET_TELEMETRY_RETENTION_DAYS): its partitions are made from then on. */
  keepDays: number;
  /** A streaming replica for the reads that may be a little behind (FLEET_DATABASE_READ_URL). */
  read?: { url: string; maxLagMs: number; onChange?: ReplicaOptions['onChange'] };
}

/** How often a replica's lag is measured. */
const REPLICA_PROBE_MS = 1_000;

/** Opens the pool, applies migrations and creates the telemetry partitions due; throws if it cannot. */
export async function createPostgresStores(options: PostgresStoresOptions): Promise<Stores> {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new Error(`not a plain schema name: ${options.schema}`);
  }
  const db = openPostgres(options);
  const { read } = options;
  const reads = read === undefined ? undefined
    : readRouter(db, openPostgres({ ...options, url: read.url, applicationName: `${options.applicationName ?? 'fleet'}-reads` }), { ...read, probeMs: REPLICA_PROBE_MS });
  const stores = postgresStores(db, reads);
  try {
    await migrate(db);
    await stores.telemetry.maintain(Date.now(), options.keepDays);
  } catch (error) {
    await stores.close();
    throw error;
  }
  return stores;
}

/** The stores over an open pool, as they are: no migration, no partitions made. */
export function postgresStores(db: Database, reads?: ReadRouter): Stores {
  return {
    auth: createPostgresAuthStore(db),
    oauth: createPostgresOAuthStore(db),
    vehicles: createPostgresVehicleStore(db),
    telemetry: createPostgresTelemetryStore(db, undefined, reads),
    events: createPostgresEventStore(db),
    rules: createPostgresRulesStore(db),
    meters: createPostgresMeterStore(db),
    maintenance: createPostgresMaintenanceStore(db),
    reportSchedules: createPostgresReportScheduleStore(db),
    rollups: createPostgresRollupStore(db, reads),
    webhooks: createPostgresWebhookStore(db),
    devices: createPostgresDeviceStore(db),
    people: createPostgresPeopleStore(db),
    audit: createPostgresAuditStore(db),
    groups: createPostgresGroupStore(db),
    drivers: createPostgresDriverStore(db),
    commands: createPostgresCommandStore(db),
    sso: createPostgresSsoStore(db),
    async ping() {
      await db.query({ name: 'ping', text: 'SELECT 1' });
    },
    ...(reads === undefined ? {} : { replica: reads }),
    async close() {
      await reads?.end();
      await db.end();
    },
  };
}
