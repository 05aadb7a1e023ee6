import { openSqlite } from './database.ts';
import { createSqliteAuthStore } from './auth.ts';
import { createSqliteVehicleStore } from './vehicles.ts';
import type { Stores } from '../stores.ts';

export function createSqliteStores(file: string): Stores {
  const db = openSqlite(file);
  const ping = db.prepare('SELECT 1 AS ok');
  return {
    auth: createSqliteAuthStore(db),
    vehicles: createSqliteVehicleStore(db),
    async ping() {
      ping.get();
    },
    async close() {
      if (db.isOpen) db.close();
    },
  };
}
