import { AppError } from './errors.ts';

/** Thrown by a service when creating one more of `what` would pass the organization's quota. */
export function quotaExceeded(limit: number, what: string): AppError {
  return new AppError('quota-exceeded', `This organization has reached its quota of ${limit} ${what}; nothing was created.`);
}
