import type { Problem } from './types.ts';

/** An answer of the API that is not a success: its status and, when it sent one, its problem. */
export class FleetApiError extends Error {
  readonly status: number;
  /** The RFC 9457 problem (`code` is the stable part to compare), when the body was one. */
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined, what: string) {
    super(`${what}: ${status}${problem === undefined ? '' : ` ${problem.code}: ${problem.detail ?? problem.title}`}`);
    this.name = 'FleetApiError';
    this.status = status;
    this.problem = problem;
  }
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'string';
}

/**
 * The data of a call's result, or a FleetApiError thrown with its problem:
 * `const vehicle = ok(await fleet.GET('/v2/fleet/vehicles/{id}', ...))`.
 */
export function ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  const { response } = result;
  return fail(response, result.error);
}

/** Throws the FleetApiError of an unsuccessful answer whose body was read as `body`. */
export function fail(response: Response, body: unknown): never {
  const where = response.url === '' ? 'request' : new URL(response.url).pathname;
  throw new FleetApiError(response.status, isProblem(body) ? body : undefined, where);
}
