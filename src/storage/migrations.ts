// The numbered migrations of a store (`NNNN_name.sql`), in order. A store records each migration
// by its number alone, so a second file with a number already used would be skipped without a
// word wherever the first had run: two files of one number are refused at start.
import { readdirSync } from 'node:fs';

export interface Migration {
  version: number;
  name: string;
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
