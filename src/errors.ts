// The one closed list of error codes the service can answer with. Domain code throws
// `new AppError(code, detail)`; the HTTP layer (src/http/problems.ts) maps each code to a status
// and renders an RFC 9457 problem. Codes are part of the public contract: add, never rename.

export const ERRORS = {
  'validation-failed': { status: 400, title: 'Request validation failed' },
  'malformed-json': { status: 400, title: 'Malformed JSON body' },
  'bad-request': { status: 400, title: 'Bad request' },
  unauthorized: { status: 401, title: 'Authentication required' },
  'invalid-token': { status: 401, title: 'Invalid credentials' },
  'invalid-credentials': { status: 401, title: 'Sign-in failed' },
  'totp-required': { status: 401, title: 'Two-factor code required' },
  'insufficient-scope': { status: 403, title: 'Insufficient scope' },
  'quota-exceeded': { status: 403, title: 'Quota exceeded' },
  'origin-not-allowed': { status: 403, title: 'Origin not allowed' },
  forbidden: { status: 403, title: 'Forbidden' },
  'csrf-failed': { status: 403, title: 'CSRF token missing or wrong' },
  'outside-groups': { status: 403, title: 'Outside the credential\'s groups' },
  'route-not-found': { status: 404, title: 'Not found' },
  'vehicle-not-found': { status: 404, title: 'Vehicle not found' },
  'no-telemetry': { status: 404, title: 'No telemetry yet' },
  'api-key-not-found': { status: 404, title: 'API key not found' },
  'organization-not-found': { status: 404, title: 'Organization not found' },
  'oauth-client-not-found': { status: 404, title: 'OAuth client not found' },
  'stream-not-found': { status: 404, title: 'Stream not found' },
  'webhook-not-found': { status: 404, title: 'Webhook not found' },
  'delivery-not-found': { status: 404, title: 'Delivery not found' },
  'geofence-not-found': { status: 404, title: 'Geofence not found' },
  'group-not-found': { status: 404, title: 'Group not found' },
  'driver-not-found': { status: 404, title: 'Driver not found' },
  'assignment-not-found': { status: 404, title: 'Driver assignment not found' },
  'schedule-not-found': { status: 404, title: 'Maintenance schedule not found' },
  'report-schedule-not-found': { status: 404, title: 'Report schedule not found' },
  'report-not-found': { status: 404, title: 'Report not found' },
  'alert-rule-not-found': { status: 404, title: 'Alert rule not found' },
  'alert-not-found': { status: 404, title: 'Alert not found' },
  'device-not-found': { status: 404, title: 'Device not found' },
  'user-not-found': { status: 404, title: 'User not found' },
  'command-not-found': { status: 404, title: 'Command not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'vehicle-exists': { status: 409, title: 'Vehicle already exists' },
  'invalid-status-transition': { status: 409, title: 'Status transition not allowed' },
  'vehicle-retired': { status: 409, title: 'Vehicle is retired' },
  'stream-closed': { status: 409, title: 'Stream is closed' },
  'status-not-patchable': { status: 409, title: 'Status is not patchable' },
  'alert-resolved': { status: 409, title: 'Alert is resolved' },
  'geofence-in-use': { status: 409, title: 'Geofence is in use' },
  'email-taken': { status: 409, title: 'Email already in use' },
  'last-admin': { status: 409, title: 'Last active admin' },
  'group-in-use': { status: 409, title: 'Group is in use' },
  'identifier-taken': { status: 409, title: 'Identifier taken' },
  'assignment-conflict': { status: 409, title: 'Assignment conflict' },
  'schedule-not-applicable': { status: 409, title: 'Schedule does not apply to the vehicle' },
  'device-offline': { status: 409, title: 'Device not connected' },
  'command-queue-full': { status: 409, title: 'Too many unfinished commands' },
  'command-not-queued': { status: 409, title: 'Command no longer queued' },
  'own-account': { status: 409, title: 'Cannot change your own account this way' },
  'totp-enabled': { status: 409, title: 'Two-factor sign-in already on' },
  'totp-not-pending': { status: 409, title: 'No two-factor enrolment pending' },
  'invitation-invalid': { status: 400, title: 'Invitation not valid' },
  'sso-failed': { status: 400, title: 'Single sign-on failed' },
  'sso-not-configured': { status: 404, title: 'Single sign-on not configured' },
  'sso-no-role': { status: 403, title: 'No role for this sign-in' },
  'cursor-expired': { status: 410, title: 'Cursor expired' },
  'precondition-failed': { status: 412, title: 'Precondition failed' },
  'device-exists': { status: 409, title: 'Device identifier taken' },
  'payload-too-large': { status: 413, title: 'Request body too large' },
  'uri-too-long': { status: 414, title: 'URI too long' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'range-not-satisfiable': { status: 416, title: 'Range not satisfiable' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'login-locked': { status: 429, title: 'Too many failed sign-ins' },
  'headers-too-large': { status: 431, title: 'Request header fields too large' },
  'internal-error': { status: 500, title: 'Internal server error' },
  'service-unavailable': { status: 503, title: 'Service unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** One problem in a request, as a JSON Pointer into the part of the request it was found in. */
export interface FieldError {
  in?: 'body' | 'query' | 'path' | 'header';
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly detail: string | undefined;
  readonly errors: FieldError[] | undefined;
  /** Extra response headers the problem needs (Allow, Retry-After, WWW-Authenticate). */
  readonly headers: Record<string, string> | undefined;
  /** The error handler logs no line for it: whoever throws it logs its cause once for many requests. */
  readonly quiet: boolean;

  constructor(
    code: ErrorCode,
    detail?: string,
    extra?: { errors?: FieldError[]; headers?: Record<string, string>; cause?: unknown; quiet?: boolean },
  ) {
    super(detail ?? ERRORS[code].title, extra?.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'AppError';
    this.code = code;
    this.detail = detail;
    this.errors = extra?.errors;
    this.headers = extra?.headers;
    this.quiet = extra?.quiet === true;
  }

  get status(): number {
    return ERRORS[this.code].status;
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/** 400 `validation-failed` for one member of the request's body, at `path` (a JSON Pointer). */
export function invalidBody(detail: string, path: string, message: string): AppError {
  return new AppError('validation-failed', detail, { errors: [{ in: 'body', path, message }] });
}

/** How far ahead of this node's clock a time a client gives may be (another machine's clock), ms. */
const CLOCK_SKEW_MS = 60_000;

/**
 * A time of the body (a validated `date-time`), ms, refused (400 at `path`) when further ahead of
 * `now` than another machine's clock may be.
 */
export function pastTimeOf(text: string, path: string, now: number): number {
  const at = Date.parse(text);
  if (at > now + CLOCK_SKEW_MS) throw invalidBody(`\`${path.slice(1)}\` is in the future.`, path, 'must not be in the future');
  return at;
}
