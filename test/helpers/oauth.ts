// OAuth test helpers: clients, tokens, form requests, free ports, and a small HTTP server that
// counts the requests it gets (to prove a URL named in a token is never fetched).
import assert from 'node:assert/strict';
import { type Server, type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { LightMyRequestResponse } from 'fastify';
import type { Scope } from '../../src/auth/scopes.ts';
import type { TestApp } from './app.ts';
export { freePort } from './ports.ts';

export const FORM = 'application/x-www-form-urlencoded';

/** Every test app gets a token-endpoint budget it cannot exhaust (the rate limit has its own tests). */
export const OAUTH_TEST_ENV = { FLEET_TOKEN_RATE_LIMIT_REQUESTS: '1000000' } as const;

export interface TestClient {
  id: string;
  secret: string;
}


/** RFC 6749 §2.3.1: both parts form-urlencoded, then Basic. */
export function basic(clientId: string, secret: string): string {
  const enc = (text: string) => encodeURIComponent(text).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(clientId)}:${enc(secret)}`).toString('base64')}`;
}

export async function createClient(ctx: TestApp, scopes: readonly Scope[], key?: string): Promise<TestClient> {
  const res = await ctx.request('POST', '/v2/oauth-clients', { body: { name: 'test client', scopes }, key });
  assert.equal(res.statusCode, 201, res.body);
  const body = res.json<{ id: string; clientSecret: string }>();
  return { id: body.id, secret: body.clientSecret };
}

/** POSTs a form body to an OAuth endpoint. */
export function postForm(
  ctx: TestApp,
  url: string,
  params: Record<string, string> | string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  const payload = typeof params === 'string' ? params : new URLSearchParams(params).toString();
  return ctx.app.inject({ method: 'POST', url, headers: { 'content-type': FORM, ...headers }, payload });
}

export async function issueToken(ctx: TestApp, client: TestClient, scope?: string): Promise<string> {
  const res = await postForm(
    ctx, '/oauth/token',
    { grant_type: 'client_credentials', ...(scope === undefined ? {} : { scope }) },
    { authorization: basic(client.id, client.secret) },
  );
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ access_token: string }>().access_token;
}

/** The two halves of a JWT we read in tests. */
export function decodeParts(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [h, p] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

export interface CountingServer {
  url: string;
  hits(): number;
  paths(): string[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that answers `respond` and counts every request it receives. */
export async function countingServer(respond: (req: IncomingMessage, res: ServerResponse) => void): Promise<CountingServer> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? '');
    respond(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    url: `http://127.0.0.1:${address.port}`,
    hits: () => seen.length,
    paths: () => [...seen],
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export function assertInvalidToken(res: LightMyRequestResponse, label: string): void {
  assert.equal(res.statusCode, 401, `${label}: expected 401, got ${res.statusCode} ${res.body.slice(0, 300)}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${label}: content-type`);
  assert.equal(res.json().code, 'invalid-token', `${label}: problem code`);
  assert.equal(res.headers['www-authenticate'], 'Bearer realm="fleet", error="invalid_token"', `${label}: WWW-Authenticate`);
}
