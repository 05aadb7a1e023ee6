// The numbered migrations of a store (`NNNN_name.sql`), in order. A store records each migration
// by its number alone, so a second file with a number already used would be skipped without a
// word wherever the first had run: two files of one number are refused at start.
import { readdirSync } from 'node:fs';

export interface Migration {
  version: number;
  name: string;
}

/**
 * The store's schema is newer than this build knows: a later Fleet wrote it. Starting would serve
 * with tables whose meaning this code does not know, so the process refuses (exit 2).
 */
export class SchemaTooNewError extends Error {
  readonly storeVersion: number;
  readonly knownVersion: number;
  constructor(storeVersion: number, knownVersion: number) {
    super(`the store's schema is version ${storeVersion}, written by a newer Fleet; this one knows up to version ${knownVersion}. ` +
      'Run that version or a later one, or restore a backup taken before the upgrade (docs/OPERATIONS.md "Upgrades").');
    this.name = 'SchemaTooNewError';
    this.storeVersion = storeVersion;
    this.knownVersion = knownVersion;
  }
}

/** Refuses a store with a migration this build does not have (see SchemaTooNewError). */
export function assertKnownSchema(applied: Iterable<number>, files: readonly Migration[]): void {
  const known = files.at(-1)?.version ?? 0;
  const newest = Math.max(0, ...applied);
  if (newest > known) throw new SchemaTooNewError(newest, known);
}

export function migrationFiles(dir: URL): Migration[] {
  const files = readdirSync(dir).filter((name) => /^\d{4}_[a-z0-9_]+\.sql$/.test(name)).sort();
  const migrations = files.map((name) => ({ version: Number(name.slice(0, 4)), name }));
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new Error(`migrations ${migrations[i - 1]!.name} and ${migrations[i]!.name} have the same number; each needs its own`);
    }
  }
  return migrations;
}
