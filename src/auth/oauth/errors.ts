// Errors of the OAuth endpoints themselves (token, revocation, introspection). RFC 6749 §5.2
// fixes their codes and their JSON shape, so they are not problem codes: the service throws an
// OAuthError naming the RFC's code, and the OAuth routes render it (status chosen there).

export const OAUTH_ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
] as const;

export type OAuthErrorCode = (typeof OAUTH_ERRORS)[number];

export class OAuthError extends Error {
  readonly error: OAuthErrorCode;

  constructor(error: OAuthErrorCode, description: string) {
    super(description);
    this.name = 'OAuthError';
    this.error = error;
  }
}
