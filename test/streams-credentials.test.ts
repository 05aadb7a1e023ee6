// Who may read what through a live stream, and for how long (docs/API.md "Live streams"): each
// type needs the scope that protects its data elsewhere (at creation and at subscribe), and a
// stream lives no longer than the credential that opened it: revoked (an API key, an OAuth client
// deleted) or expired (a key's expiresAt, an access token's exp), its socket is closed with 1008
// and its tickets are refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { Scope } from '../src/auth/scopes.ts';
import { type CountingServer, OAUTH_TEST_ENV, countingServer, createClient, issueToken } from './helpers/oauth.ts';
import { type StreamApp, type StreamClient, attach, closeAll, createStreamApp, refused, withTimeout } from './helpers/streams.ts';

const ISSUER = 'https://idp.example.test/streams';
const AUDIENCE = 'https://fleet.example.test/api';
const ORG_CLAIM = 'https://fleet.example.test/org';

let ctx: StreamApp;
let idp: { privateKey: CryptoKey; publicJwk: JWK };
let idpServer: CountingServer;
const clients: StreamClient[] = [];
before(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  idp = { privateKey: pair.privateKey, publicJwk: await exportJWK(pair.publicKey) };
  idpServer = await countingServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [{ ...idp.publicJwk, kid: 'k1', alg: 'RS256', use: 'sig' }] }));
  });
  ctx = await createStreamApp({
    env: {
      ...OAUTH_TEST_ENV, FLEET_QUOTA_STREAMS: '1000',
      FLEET_OAUTH_ISSUER: ISSUER, FLEET_OAUTH_AUDIENCE: AUDIENCE, FLEET_OAUTH_JWKS_URL: `${idpServer.url}/keys`, FLEET_OAUTH_ORG_CLAIM: ORG_CLAIM,
    },
  });
  await ctx.registerVehicle('cr-1');
});
after(async () => {
  await closeAll(clients);
  await ctx.close();
  await idpServer.close();
});

async function open(url: string, options: Parameters<typeof attach>[1] = {}): Promise<StreamClient> {
  const client = await attach(url, options, clients);
  assert.equal((await client.next()).type, 'connected');
  return client;
}

const create = (body: Record<string, unknown>, key: string, vehicleId = 'cr-1') =>
  ctx.request('POST', vehicleId === '' ? '/v2/telemetry/stream' : `/v2/telemetry/${vehicleId}/stream`, { body, key });

describe('each type needs its scope', () => {
  const needs: Array<[string, Scope]> = [
    ['location', 'telemetry:read'], ['battery', 'telemetry:read'], ['diagnostics', 'telemetry:read'], ['status', 'fleet:read'], ['events', 'events:read'],
  ];

  test('at creation: 403 insufficient-scope naming the scope, for the vehicle and the fleet form alike', async () => {
    for (const [type, scope] of needs) {
      const without = await ctx.keyWith(['streams', ...needs.map(([, s]) => s).filter((s) => s !== scope)]);
      for (const vehicleId of ['cr-1', '']) {
        const res = await create({ events: [type] }, without, vehicleId);
        assert.equal(res.statusCode, 403, `${type} without ${scope}: ${res.body}`);
        assert.equal(res.json().code, 'insufficient-scope');
        assert.match(res.json().detail, new RegExp(`"${scope}"`));
      }
      assert.equal((await create({ events: [type] }, await ctx.keyWith(['streams', scope]))).statusCode, 201, `${type} with streams and ${scope}`);
    }
    // One type short is enough to refuse the whole stream.
    const telemetryOnly = await ctx.keyWith(['streams', 'telemetry:read']);
    assert.equal((await create({ events: ['location', 'status'] }, telemetryOnly)).statusCode, 403);
    assert.equal((await ctx.request('GET', '/v2/streams/str_none', { key: telemetryOnly })).statusCode, 404, '`streams` still reads streams');
  });

  test('at subscribe: an error message, nothing subscribed, the socket stays open; a ticket subscribes with its creator\'s scopes', async () => {
    const key = await ctx.keyWith(['streams', 'telemetry:read']);
    const created = (await create({ events: ['battery'], interval: 0 }, key)).json();
    const client = await open(created.url);
    for (const events of [['status'], ['events'], ['location', 'status']]) {
      client.send({ type: 'subscribe', events });
      const reply = await client.next((m) => m.type === 'error' || m.type === 'subscriptions');
      assert.equal(reply.type, 'error', JSON.stringify(events));
      assert.equal(reply.code, 'insufficient-scope');
      assert.equal(reply.seq, undefined);
    }
    client.send({ type: 'subscribe', events: ['location'] });
    assert.deepEqual(await client.next((m) => m.type === 'subscriptions'), { type: 'subscriptions', subscriptions: ['location', 'battery'] });
    assert.ok(client.isOpen);

    // By bearer, the socket's own credential decides.
    const bearer = await open(`${ctx.wsUrl}/v2/streams/${created.streamId}`, { headers: { authorization: `Bearer ${ctx.adminKey}` } });
    bearer.send({ type: 'subscribe', events: ['status'] });
    assert.deepEqual(await bearer.next((m) => m.type === 'subscriptions'), { type: 'subscriptions', subscriptions: ['location', 'battery', 'status'] });
  });
});

describe('a stream lives no longer than its credential', () => {
  test('a revoked key: its attached stream is closed 1008 and ends; its unused tickets answer 401', async () => {
    const made = (await ctx.request('POST', '/v2/api-keys', { body: { name: 'streamer', scopes: ['streams', 'telemetry:read'] } })).json();
    const attached = (await create({ events: ['location'] }, made.key)).json();
    const waiting = (await create({ events: ['location'] }, made.key)).json();
    const client = await open(attached.url);
    // Another key's stream, attached with the revoked key as bearer: only that socket closes.
    const others = (await create({ events: ['location'] }, ctx.adminKey)).json();
    const borrowed = await open(`${ctx.wsUrl}/v2/streams/${others.streamId}`, { headers: { authorization: `Bearer ${made.key}` } });

    assert.equal((await ctx.request('DELETE', `/v2/api-keys/${made.id}`)).statusCode, 204);
    const closed = await withTimeout(client.closed, 5_000, 'the revoked key\'s socket to close');
    assert.equal(closed.code, 1008);
    assert.equal((await withTimeout(borrowed.closed, 5_000, 'the socket attached with the revoked key to close')).code, 1008);
    assert.equal((await ctx.request('GET', `/v2/streams/${attached.streamId}`)).json().status, 'closed');
    assert.equal((await ctx.request('GET', `/v2/streams/${others.streamId}`)).json().status, 'connected', 'the other key\'s stream lives on');

    const late = await refused(waiting.url, {}, clients);
    assert.equal(late.status, 401);
    assert.equal(late.body.code, 'invalid-token');
  });

  test('a key that expires: its socket is closed 1008 when it does', async () => {
    const expiresAt = new Date(Date.now() + 1_500).toISOString();
    const made = (await ctx.request('POST', '/v2/api-keys', { body: { name: 'short', scopes: ['streams', 'telemetry:read'], expiresAt } })).json();
    assert.ok(made.key, JSON.stringify(made));
    const created = (await create({ events: ['battery'] }, made.key)).json();
    const client = await open(created.url);
    const closed = await withTimeout(client.closed, 6_000, 'the expiring key\'s socket to close');
    assert.equal(closed.code, 1008);
    assert.ok(Date.now() >= Date.parse(expiresAt) - 50, 'not before the key expired');
    assert.equal((await ctx.request('GET', `/v2/streams/${created.streamId}`)).json().status, 'closed');
  });

  test('an access token that expires (an identity provider\'s, two seconds long): its socket is closed 1008 at `exp`', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({
      iss: ISSUER, aud: AUDIENCE, sub: 'svc', client_id: 'short-lived', iat: now, exp: now + 2, scope: 'streams telemetry:read',
      [ORG_CLAIM]: ctx.organizationId,
    }).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'k1' }).sign(idp.privateKey);
    const created = await create({ events: ['location'] }, token);
    assert.equal(created.statusCode, 201, created.body);
    const client = await open(created.json().url);
    const closed = await withTimeout(client.closed, 7_000, 'the expiring token\'s socket to close');
    assert.equal(closed.code, 1008);
    assert.ok(Date.now() >= (now + 2) * 1000 - 50, 'not before the token expired');
  });

  test('an OAuth client deleted: the streams its tokens opened end (1008)', async () => {
    const client = await createClient(ctx, ['streams', 'fleet:read']);
    const token = await issueToken(ctx, client);
    const created = (await create({ events: ['status'] }, token)).json();
    const socket = await open(created.url);
    assert.equal((await ctx.request('DELETE', `/v2/oauth-clients/${client.id}`)).statusCode, 204);
    assert.equal((await withTimeout(socket.closed, 5_000, 'the deleted client\'s socket to close')).code, 1008);
  });

  test('a person disabled: the streams their session opened end (1008); another user\'s stay', async () => {
    async function signedIn(email: string) {
      const invited = (await ctx.request('POST', '/v2/users', { body: { email, name: 'Streamer', role: 'viewer' } })).json();
      const accepted = await ctx.request('POST', '/auth/invitations/accept', { key: null, body: { token: invited.invitation.token, password: 'a long enough passphrase' } });
      assert.equal(accepted.statusCode, 200, accepted.body);
      const cookie = String([accepted.headers['set-cookie']].flat()[0]).split(';')[0]!;
      return { id: invited.id as string, headers: { cookie, 'x-csrf-token': accepted.json().csrfToken as string } };
    }
    const [leaving, staying] = [await signedIn('leaving@example.com'), await signedIn('staying@example.com')];
    const streamOf = async (person: { headers: Record<string, string> }) => {
      const created = await ctx.request('POST', '/v2/telemetry/cr-1/stream', { key: null, headers: person.headers, body: { events: ['status'] } });
      assert.equal(created.statusCode, 201, created.body);
      return open(created.json().url);
    };
    const [gone, kept] = [await streamOf(leaving), await streamOf(staying)];
    assert.equal((await ctx.request('PATCH', `/v2/users/${leaving.id}`, { body: { status: 'disabled' } })).statusCode, 200);
    assert.equal((await withTimeout(gone.closed, 5_000, 'the disabled user\'s socket to close')).code, 1008);
    kept.send({ type: 'subscribe', events: ['status'] });
    assert.equal((await kept.next((m) => m.type === 'subscriptions' || m.type === 'error')).type, 'subscriptions', 'the other person\'s stream is open');
  });
});
