import { openSqlite } from './database.ts';
import { createSqliteAuthStore } from './auth.ts';
import { createSqliteOAuthStore } from './oauth.ts';
import { createSqliteTelemetryStore } from './telemetry.ts';
import { createSqliteVehicleStore } from './vehicles.ts';
import type { Stores } from '../stores.ts';

export function createSqliteStores(file: string): Stores {
  const db = openSqlite(file);
  const ping = db.prepare('SELECT 1 AS ok');
  return {
    auth: createSqliteAuthStore(db),
    oauth: createSqliteOAuthStore(db),
    vehicles: createSqliteVehicleStore(db),
    telemetry: createSqliteTelemetryStore(db),
    async ping() {
      ping.get();
    },
    async close() {
      if (db.isOpen) db.close();
    },
  };
}
