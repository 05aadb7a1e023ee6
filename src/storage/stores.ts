// Every store the service uses, as one bundle handed to app.ts. Each backend (SQLite now,
// PostgreSQL for cluster mode) provides the same bundle.
import type { OAuthStore } from '../auth/oauth/store.ts';
import type { AuthStore } from '../auth/store.ts';
import type { Config } from '../config.ts';
import type { TelemetryStore } from '../telemetry/store.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import { createSqliteStores } from './sqlite/index.ts';

export interface Stores {
  auth: AuthStore;
  oauth: OAuthStore;
  vehicles: VehicleStore;
  telemetry: TelemetryStore;
  /** Throws when the backend cannot answer; /readyz reports it. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function openStores(database: Config['database']): Stores {
  switch (database.kind) {
    case 'sqlite':
      return createSqliteStores(database.path);
  }
}
