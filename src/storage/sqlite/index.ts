import type { DatabaseSync } from 'node:sqlite';
import { createCheckpointer } from './checkpointer.ts';
import { openSqlite, openSqliteReader } from './database.ts';
import { diskSpaceOf } from './disk-space.ts';
import { ownDatabaseFile } from './owner.ts';
import { createSqliteAuthStore } from './auth.ts';
import { createSqliteEventAppender, createSqliteEventStore } from './events.ts';
import { createSqliteMeterStore, createSqliteRuleWrites, createSqliteRulesStore } from './rules.ts';
import { createSqliteWebhookStore } from './webhooks.ts';
import { createSqliteDeviceStore } from './devices.ts';
import { createSqliteOAuthStore } from './oauth.ts';
import { createSqliteAuditStore } from './audit.ts';
import { createSqliteCommandStore } from './commands.ts';
import { createSqliteGroupStore, createSqliteMemberships } from './groups.ts';
import { createSqliteAssignments, createSqliteDriverStore } from './drivers.ts';
import { createSqliteMaintenanceStore } from './maintenance.ts';
import { createSqliteReportScheduleStore } from './report-schedules.ts';
import { createSqliteRollupStore, createSqliteRollupWrites } from './rollups.ts';
import { createSqlitePeopleStore } from './people.ts';
import { createSqliteSsoStore } from './sso.ts';
import { createSqliteTelemetryStore } from './telemetry.ts';
import { createSqliteVehicleStore } from './vehicles.ts';
import { createVehicleStatuses } from './vehicle-status.ts';
import { type SyncFile, createWalSync } from './wal-sync.ts';
import type { Stores } from '../stores.ts';

/**
 * The embedded store's bundle, and `db`, the one connection every write of it goes through: what
 * works on the same database beside the service in this process (a benchmark) reaches it there,
 * since a commit hook (database.ts `beforeCommit`) belongs to a connection. The service itself
 * uses only the bundle.
 */
export type SqliteStores = Stores & { readonly db: DatabaseSync };

/**
 * `syncFile` syncs the WAL after telemetry commits (`fs.fdatasync`; a test passes one that fails);
 * `checkpointPages` is the WAL size that starts a checkpoint (checkpointer.ts; tests make it small).
 */
export function createSqliteStores(file: string, options: { syncFile?: SyncFile; checkpointPages?: number } = {}): SqliteStores {
  // Before opening: a second process must not even run the migrations on the owner's file.
  const owner = file === ':memory:' ? undefined : ownDatabaseFile(file);
  let db;
  try {
    db = openSqlite(file);
  } catch (error) {
    owner?.release();
    throw error;
  }
  // An in-memory database has no file to open twice: its reads stay on its one connection.
  const reader = file === ':memory:' ? db : openSqliteReader(file);
  const ping = db.prepare('SELECT 1 AS ok');
  // Checkpoints on a thread of their own (an in-memory database has no WAL).
  const checkpoints = file === ':memory:' ? undefined : createCheckpointer(db, file, { pages: options.checkpointPages });
  const wal = createWalSync(db, options.syncFile, checkpoints);
  const appendEvents = createSqliteEventAppender(db);
  const statuses = createVehicleStatuses(db, appendEvents);
  const assignments = createSqliteAssignments(db);
  const rollupWrites = createSqliteRollupWrites(db);
  const ruleWrites = createSqliteRuleWrites(db, appendEvents, assignments, rollupWrites);
  const disk = diskSpaceOf(db);
  return {
    db,
    auth: createSqliteAuthStore(db),
    oauth: createSqliteOAuthStore(db),
    vehicles: createSqliteVehicleStore(db, wal, statuses, appendEvents, createSqliteMemberships(db), (organizationId, vehicleId) => ruleWrites.forget(organizationId, vehicleId)),
    telemetry: createSqliteTelemetryStore(db, wal, statuses, ruleWrites, reader),
    events: createSqliteEventStore(db),
    rules: createSqliteRulesStore(db, ruleWrites, wal),
    meters: createSqliteMeterStore(ruleWrites, wal),
    maintenance: createSqliteMaintenanceStore(db, wal, appendEvents),
    reportSchedules: createSqliteReportScheduleStore(db, wal, appendEvents),
    webhooks: createSqliteWebhookStore(db, wal),
    devices: createSqliteDeviceStore(db, wal),
    people: createSqlitePeopleStore(db),
    audit: createSqliteAuditStore(db, wal),
    groups: createSqliteGroupStore(db),
    drivers: createSqliteDriverStore(db, wal, appendEvents, assignments, rollupWrites),
    rollups: createSqliteRollupStore(db, reader, wal, rollupWrites, ruleWrites),
    commands: createSqliteCommandStore(db, wal, appendEvents),
    sso: createSqliteSsoStore(db),
    async ping() {
      ping.get();
      wal.check();
      disk.check();
    },
    async close() {
      await checkpoints?.close();
      wal.close();
      if (reader !== db && reader.isOpen) reader.close();
      if (db.isOpen) db.close();
      owner?.release();
    },
  };
}
