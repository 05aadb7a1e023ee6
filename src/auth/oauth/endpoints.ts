// The OAuth 2.0 protocol endpoints: token (RFC 6749 client credentials), revocation (RFC 7009),
// introspection (RFC 7662), and the two documents under /.well-known. The protocol endpoints live in
// their own encapsulated plugin, the only place that parses form bodies (everywhere else a form
// body still answers 415) and renders errors as RFC 6749 JSON instead of problem+json.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { REALM } from '../../http/auth.ts';
import { responses } from '../../schema/common.ts';
import { toFieldErrors } from '../../schema/validation.ts';
import { SCOPES } from '../scopes.ts';
import type { OAuthService } from './clients.ts';
import { OAuthError } from './errors.ts';
import {
  EmptyBody,
  Introspection,
  Jwks,
  OAuthErrorBody,
  ServerMetadata,
  TokenBody,
  TokenRequestBody,
  TokenResponse,
} from './schema.ts';
import { typed } from '../../http/typed.ts';

const FORM = 'application/x-www-form-urlencoded';
const FORM_BODY_LIMIT = 64 * 1024;
const TAGS = ['oauth'];

export interface OAuthEndpointOptions {
  oauth: OAuthService;
  /** Fleet's public URL: the issuer, and the base of every endpoint URL in the metadata. */
  publicUrl: string;
}

/** Both ways a client may authenticate (RFC 6749 §2.3.1); using both at once is an error. */
function clientCredentials(request: FastifyRequest, body: { client_id?: string; client_secret?: string }) {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
    if (match === null) throw new OAuthError('invalid_client', 'Authenticate the client with HTTP Basic, or client_id and client_secret in the body.');
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError('invalid_client', 'The Basic credentials are not client_id:client_secret.');
    let clientId: string;
    let clientSecret: string;
    try {
      // RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined.
      const formDecode = (text: string) => decodeURIComponent(text.replace(/\+/g, ' '));
      clientId = formDecode(decoded.slice(0, colon));
      clientSecret = formDecode(decoded.slice(colon + 1));
    } catch {
      throw new OAuthError('invalid_client', 'The Basic credentials are not form-urlencoded.');
    }
    if (body.client_secret !== undefined) {
      throw new OAuthError('invalid_request', 'Authenticate the client one way only: HTTP Basic or client_secret in the body, not both.');
    }
    if (body.client_id !== undefined && body.client_id !== clientId) {
      throw new OAuthError('invalid_request', 'client_id in the body differs from the one in HTTP Basic.');
    }
    return { clientId, clientSecret };
  }
  if (body.client_id === undefined || body.client_secret === undefined) {
    throw new OAuthError('invalid_client', 'Client authentication is required: HTTP Basic, or client_id and client_secret in the body.');
  }
  return { clientId: body.client_id, clientSecret: body.client_secret };
}

function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  if (error.error === 'invalid_client') void reply.header('www-authenticate', `Basic realm="${REALM}"`);
  return reply
    .code(error.error === 'invalid_client' ? 401 : 400)
    .type('application/json; charset=utf-8')
    .serializer(JSON.stringify)
    .send({ error: error.error, error_description: error.message });
}

/** Request errors become RFC 6749 `invalid_request`; anything else goes on to problem+json (413, 429, 500). */
function toOAuthError(error: FastifyError): OAuthError | undefined {
  if (error instanceof OAuthError) return error;
  if (error.validation !== undefined) {
    const fields = toFieldErrors(error.validation, error.validationContext);
    return new OAuthError('invalid_request', fields.map((f) => `${f.path.replace(/^\//, '') || 'body'} ${f.message}`).join('; '));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new OAuthError('invalid_request', `Send the parameters as ${FORM}.`);
    default:
      return undefined;
  }
}

const oauthResponses = (success: Record<number, typeof TokenResponse | typeof Introspection | typeof EmptyBody>) =>
  responses({ ...success, 400: OAuthErrorBody, 401: OAuthErrorBody }, { authenticated: false, errors: [413, 429, 500] });

/** POST /oauth/token, /oauth/revoke and /oauth/introspect. */
async function protocolEndpoints(instance: FastifyInstance, opts: OAuthEndpointOptions) {
  const app = typed(instance);
  const { oauth } = opts;

  // Form bodies only, in this plugin only.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    const params = new Map<string, string>();
    for (const [name, value] of new URLSearchParams(body as string)) {
      if (params.has(name)) {
        // RFC 6749 §3.2: no parameter may be sent more than once.
        done(new OAuthError('invalid_request', `Parameter "${name.slice(0, 64)}" is repeated.`), undefined);
        return;
      }
      params.set(name, value);
    }
    done(null, Object.fromEntries(params));
  });

  app.setErrorHandler((error: FastifyError, _request, reply) => {
    const oauthError = toOAuthError(error);
    if (oauthError === undefined) throw error;
    return sendOAuthError(reply, oauthError);
  });

  // secret: RFC 6749 §5.1, token responses (and their errors) must not be cached; nor what
  // introspection tells of a token.
  const config = { public: true, rateLimit: 'ip', secret: true } as const;

  app.post('/oauth/token', {
    config,
    schema: {
      tags: TAGS, operationId: 'requestOAuthToken', summary: 'Get an access token (client credentials grant)',
      description:
        'RFC 6749 §4.4. Form body (`application/x-www-form-urlencoded`): `grant_type=client_credentials`, optional `scope` ' +
        '(space-separated, narrows the token). Client authentication by HTTP Basic (`client_secret_basic`) or ' +
        '`client_id` + `client_secret` in the body (`client_secret_post`), never both. Errors are RFC 6749 JSON ' +
        '`{error, error_description}`, not problem+json. Responses carry `Cache-Control: no-store`.',
      consumes: [FORM],
      body: TokenRequestBody,
      response: oauthResponses({ 200: TokenResponse }),
    },
  }, async (request) => {
    const body = request.body;
    const credentials = clientCredentials(request, body);
    const issued = await oauth.token({ grantType: body.grant_type, ...credentials, scope: body.scope });
    return { access_token: issued.accessToken, token_type: 'Bearer' as const, expires_in: issued.expiresIn, scope: issued.scope };
  });

  app.post('/oauth/revoke', {
    config,
    schema: {
      tags: TAGS, operationId: 'revokeOAuthToken', summary: 'Revoke an access token',
      description:
        'RFC 7009. Client-authenticated like the token endpoint. A token issued to the calling client stops working at once; ' +
        'any other token (unknown, invalid, expired, another client\'s) is left alone, and the answer is 200 either way.',
      consumes: [FORM],
      body: TokenBody,
      response: oauthResponses({ 200: EmptyBody }),
    },
  }, async (request, reply) => {
    const body = request.body;
    await oauth.revoke(clientCredentials(request, body), body.token);
    return reply.code(200).send();
  });

  app.post('/oauth/introspect', {
    config,
    schema: {
      tags: TAGS, operationId: 'introspectOAuthToken', summary: 'Introspect an access token',
      description:
        'RFC 7662. Client-authenticated like the token endpoint. `active: true` with the token\'s claims only for a live ' +
        'Fleet token of the calling client\'s organization; `{active: false}` for anything else.',
      consumes: [FORM],
      body: TokenBody,
      response: oauthResponses({ 200: Introspection }),
    },
  }, async (request) => {
    const body = request.body;
    return oauth.introspect(clientCredentials(request, body), body.token);
  });
}

/** GET /.well-known/jwks.json and /.well-known/oauth-authorization-server. */
async function wellKnownRoutes(app: FastifyInstance, opts: OAuthEndpointOptions) {
  const { oauth, publicUrl } = opts;
  const metadata = {
    issuer: publicUrl,
    token_endpoint: `${publicUrl}/oauth/token`,
    jwks_uri: `${publicUrl}/.well-known/jwks.json`,
    revocation_endpoint: `${publicUrl}/oauth/revoke`,
    introspection_endpoint: `${publicUrl}/oauth/introspect`,
    grant_types_supported: ['client_credentials'],
    response_types_supported: [],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: [...SCOPES],
    service_documentation: `${publicUrl}/docs`,
  };

  app.get('/.well-known/jwks.json', {
    config: { public: true },
    schema: {
      tags: TAGS, operationId: 'getJwks', summary: 'Keys that verify Fleet\'s access tokens (JWKS)',
      description: 'The current signing key and retired ones whose tokens may not have expired yet. Public parts only.',
      response: responses({ 200: Jwks }, { authenticated: false, errors: [500] }),
    },
  }, async () => oauth.jwks());

  app.get('/.well-known/oauth-authorization-server', {
    config: { public: true },
    schema: {
      tags: TAGS, operationId: 'getOAuthServerMetadata', summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
      description: 'Where the token, revocation, introspection and key-set endpoints are, and what they support, for OAuth client libraries to discover.',
      response: responses({ 200: ServerMetadata }, { authenticated: false, errors: [500] }),
    },
  }, async () => metadata);
}

export async function oauthEndpoints(app: FastifyInstance, opts: OAuthEndpointOptions) {
  await app.register(protocolEndpoints, opts);
  await app.register(wellKnownRoutes, opts);
}
