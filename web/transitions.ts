// The vehicle status transition table (docs/API.md "Status and transitions"), mirrored from src/vehicles/transitions.ts
// so the browser needs nothing from the server's sources; test/dashboard.test.ts checks that
// the two tables agree.

export const STATUSES = ['registered', 'active', 'inactive', 'maintenance', 'retired'] as const;
export type Status = (typeof STATUSES)[number];

export const TYPES = ['car', 'van', 'truck', 'bus', 'shuttle', 'motorcycle', 'scooter', 'bicycle', 'robot', 'drone', 'other'] as const;

export const TRANSITIONS: Readonly<Record<Status, readonly Status[]>> = {
  registered: ['active', 'inactive', 'maintenance', 'retired'],
  active: ['inactive', 'maintenance', 'retired'],
  inactive: ['active', 'maintenance', 'retired'],
  maintenance: ['active', 'inactive', 'retired'],
  retired: [],
};

export function isStatus(value: string): value is Status {
  return (STATUSES as readonly string[]).includes(value);
}

/** The statuses a vehicle in `from` may be moved to. */
export function nextStatuses(from: string): readonly Status[] {
  return isStatus(from) ? TRANSITIONS[from] : [];
}
