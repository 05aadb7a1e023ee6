// The only reader of process.env. Every variable is parsed here, every problem is collected, and
// the caller decides what to do with the list (main.ts prints it and exits non-zero).
import path from 'node:path';
import { isWellFormedApiKey } from './auth/keys.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type DatabaseConfig = { kind: 'sqlite'; path: string };

export interface Config {
  host: string;
  port: number;
  database: DatabaseConfig;
  logLevel: LogLevel;
  /** Used only on the first start of an empty store, as the first admin key. */
  adminKey: string | undefined;
}

/** What each variable means, its default, and how it is parsed; README's table mirrors this. */
export const VARIABLES = {
  FLEET_HOST: { default: '0.0.0.0', doc: 'Address to listen on.' },
  FLEET_PORT: { default: '8080', doc: 'HTTP port (0 picks a free one).' },
  FLEET_DATABASE_URL: {
    default: 'sqlite:./data/fleet.db',
    doc: 'Store location: `sqlite:<file>` (embedded) or `sqlite::memory:`.',
  },
  FLEET_LOG_LEVEL: { default: 'info', doc: `One of ${LOG_LEVELS.join(', ')}.` },
  FLEET_ADMIN_KEY: {
    default: '',
    doc: 'First admin key (32 to 512 printable ASCII characters), used on the first start of an empty store instead of a generated one.',
  },
} as const;

type VariableName = keyof typeof VARIABLES;
export type Env = Readonly<Record<string, string | undefined>>;

export type ConfigResult = { ok: true; config: Config } | { ok: false; errors: string[] };

export function loadConfig(env: Env = process.env, cwd = process.cwd()): ConfigResult {
  const errors: string[] = [];
  const read = (name: VariableName): string => {
    const value = env[name];
    return value === undefined || value === '' ? VARIABLES[name].default : value;
  };

  const host = read('FLEET_HOST');
  if (!/^[A-Za-z0-9.:[\]-]+$/.test(host)) errors.push(`FLEET_HOST: "${host}" is not a host name or address`);

  const portText = read('FLEET_PORT');
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port > 65535) {
    errors.push(`FLEET_PORT: "${portText}" is not a port number (0 to 65535)`);
  }

  const database = parseDatabaseUrl(read('FLEET_DATABASE_URL'), cwd, errors);

  const logLevel = read('FLEET_LOG_LEVEL') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    errors.push(`FLEET_LOG_LEVEL: "${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }

  const adminKey = read('FLEET_ADMIN_KEY') || undefined;
  if (adminKey !== undefined) {
    if (!/^[\x21-\x7e]{32,512}$/.test(adminKey)) {
      errors.push('FLEET_ADMIN_KEY: must be 32 to 512 printable ASCII characters without spaces');
    } else if (adminKey.startsWith('fleet_') && !isWellFormedApiKey(adminKey)) {
      // A value in Fleet's own key format must carry a valid checksum, or it could never be used.
      errors.push('FLEET_ADMIN_KEY: starts with "fleet_" but is not a well-formed Fleet key (bad checksum)');
    }
  }

  if (errors.length > 0 || database === undefined) return { ok: false, errors };
  return { ok: true, config: { host, port, database, logLevel, adminKey } };
}

function parseDatabaseUrl(url: string, cwd: string, errors: string[]): DatabaseConfig | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme ?? '') {
    case 'sqlite': {
      const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
      if (rest === '') {
        errors.push('FLEET_DATABASE_URL: "sqlite:" needs a file path, e.g. sqlite:./data/fleet.db');
        return undefined;
      }
      return { kind: 'sqlite', path: rest === ':memory:' ? rest : path.resolve(cwd, rest) };
    }
    case 'postgres':
    case 'postgresql':
      errors.push(
        'FLEET_DATABASE_URL: PostgreSQL (cluster mode) is not available in this version; use sqlite:<file>',
      );
      return undefined;
    default:
      errors.push(
        `FLEET_DATABASE_URL: unsupported scheme in "${redactUrl(url)}"; use sqlite:<file> (e.g. sqlite:./data/fleet.db)`,
      );
      return undefined;
  }
}

/** Never echo a password from a connection string back into logs. */
function redactUrl(url: string): string {
  // Up to the last `@`: a password may itself hold `@` or `/`.
  return url.replace(/\/\/([^:/@]*):.*@/, '//$1:***@');
}
