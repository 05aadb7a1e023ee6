// The audit log (docs/API.md "Audit log"): what is recorded, by whom, with which outcome; that a
// change's entry commits with the change (and only with one); that no secret reaches an entry;
// filters, paging, organizations and retention; on both stores.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { AUDITED_OPERATIONS, NOT_AUDITED, auditActionOf } from '../src/audit/actions.ts';
import { startAuditRetention } from '../src/audit/retention.ts';
import { openApiDocument } from '../sdk/scripts/generate.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

const PASSWORD = 'correct horse battery staple';
const skipPostgres = await skipUnlessPostgres();

interface Entry {
  id: string;
  at: string;
  actor: { type: string; id: string | null; name: string | null };
  action: string;
  method: string;
  path: string;
  status: number;
  outcome: string;
  resource: { type: string | null; id: string | null };
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
}

async function entries(app: TestApp, query = '', key = app.adminKey): Promise<Entry[]> {
  await app.app.auditFlush();
  const res = await app.request('GET', `/v2/audit-log${query}`, { key });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().entries;
}

function cookieOf(response: LightMyRequestResponse): string {
  const line = [response.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith('fleet_session='));
  assert.ok(line, `a session cookie (status ${response.statusCode}: ${response.body})`);
  return line.split(';')[0]!;
}

test('every change route has its action, and every action its route (telemetry ingestion excepted)', async () => {
  const doc = await openApiDocument() as unknown as { paths: Record<string, Record<string, { operationId: string }>> };
  const operations = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      operations.add(op.operationId);
      if (!['post', 'put', 'patch', 'delete'].includes(method) || !/^\/(v2|api\/v1|auth)\//.test(path)) continue;
      assert.ok(auditActionOf(op.operationId) !== undefined || NOT_AUDITED.has(op.operationId), `${method.toUpperCase()} ${path} (${op.operationId}) has no audit action`);
    }
  }
  for (const id of [...AUDITED_OPERATIONS, ...NOT_AUDITED]) assert.ok(operations.has(id), `${id} names no operation`);
});

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`the audit log on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('changes, failures and refusals: who, what, on what, how it ended; filters and paging', async (t) => {
      const app = await createTestApp({ backend });
      t.after(() => app.close());
      await app.registerVehicle('van-1');
      assert.equal((await app.request('PATCH', '/v2/fleet/vehicles/van-1', { body: { name: 'Van one' }, headers: { 'user-agent': 'audit-test' } })).statusCode, 200);
      assert.equal((await app.request('PATCH', '/v2/fleet/vehicles/ghost', { body: { name: 'x' } })).statusCode, 404);
      assert.equal((await app.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-1', type: 'van' } })).statusCode, 409);
      assert.equal((await app.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'bad id!', type: 'van' } })).statusCode, 400);
      const webhook = await app.request('POST', '/v2/webhooks', { body: { url: 'https://example.com/hook', eventTypes: ['*'] } });
      assert.equal(webhook.statusCode, 201);
      const reader = await app.keyWith(['fleet:read']);
      assert.equal((await app.request('GET', '/v2/users', { key: reader })).statusCode, 403);
      assert.equal((await app.request('PATCH', '/v2/fleet/vehicles/van-1', { key: reader, body: { name: 'no' } })).statusCode, 403);
      assert.equal((await app.request('GET', '/v2/fleet/vehicles', { key: 'fleet_not_a_key' })).statusCode, 401);
      // Not recorded: a read, a request with no credential at all, telemetry.
      assert.equal((await app.request('GET', '/v2/fleet/vehicles')).statusCode, 200);
      assert.equal((await app.request('GET', '/v2/fleet/vehicles', { key: null })).statusCode, 401);
      assert.equal((await app.request('POST', '/v2/telemetry/van-1', { body: { data: { speed: 3 } } })).statusCode, 202);

      const all = await entries(app);
      const summary = all.map((e) => `${e.method} ${e.path} ${e.status} ${e.outcome} ${e.action} ${e.resource.type}:${e.resource.id}`);
      assert.deepEqual(summary, [
        'GET /v2/fleet/vehicles 401 denied credential.rejected null:null',
        'PATCH /v2/fleet/vehicles/van-1 403 denied vehicle.updated vehicle:van-1',
        'GET /v2/users 403 denied access.denied null:null',
        `POST /v2/webhooks 201 succeeded webhook.created webhook:${webhook.json().id}`,
        'POST /v2/fleet/vehicles 400 failed vehicle.created vehicle:bad id!',
        'POST /v2/fleet/vehicles 409 failed vehicle.created vehicle:van-1',
        'PATCH /v2/fleet/vehicles/ghost 404 failed vehicle.updated vehicle:ghost',
        'PATCH /v2/fleet/vehicles/van-1 200 succeeded vehicle.updated vehicle:van-1',
        'POST /v2/fleet/vehicles 201 succeeded vehicle.created vehicle:van-1',
      ]);
      const patched = all[7]!;
      assert.deepEqual(patched.actor, { type: 'apiKey', id: patched.actor.id, name: 'First admin key' });
      assert.match(patched.actor.id!, /^key_/);
      assert.equal(patched.userAgent, 'audit-test');
      assert.equal(patched.ip, '127.0.0.1');
      assert.match(patched.requestId!, /^[0-9a-f-]{36}$/);
      assert.ok(Math.abs(Date.parse(patched.at) - Date.now()) < 60_000);
      assert.equal(all[1]!.actor.name, 'test key', 'a refusal names the credential refused');
      assert.deepEqual(all[0]!.actor, { type: 'anonymous', id: null, name: null });

      // Filters, each alone and together.
      assert.deepEqual((await entries(app, '?outcome=denied')).map((e) => e.status), [401, 403, 403]);
      assert.deepEqual((await entries(app, '?action=vehicle.updated&outcome=succeeded')).map((e) => e.path), ['/v2/fleet/vehicles/van-1']);
      assert.equal((await entries(app, '?resourceType=vehicle&resourceId=van-1')).length, 4);
      assert.equal((await entries(app, `?actorId=${all[1]!.actor.id}`)).length, 2);
      assert.equal((await entries(app, `?to=${encodeURIComponent(all.at(-1)!.at)}`)).length, 0, 'to is exclusive');
      assert.equal((await entries(app, `?from=${encodeURIComponent(all.at(-1)!.at)}`)).length, all.length, 'from is inclusive');
      // Paging: the same entries, newest first, whatever the page size.
      const seen: Entry[] = [];
      let cursor: string | null = null;
      do {
        const res = await app.request('GET', `/v2/audit-log?limit=4${cursor === null ? '' : `&cursor=${cursor}`}`);
        assert.equal(res.statusCode, 200);
        seen.push(...res.json().entries);
        cursor = res.json().nextCursor;
      } while (cursor !== null);
      assert.deepEqual(seen.map((e) => e.id), all.map((e) => e.id));
      for (const bad of ['?cursor=nope', '?outcome=maybe', '?limit=0', '?from=yesterday', '?actorId=']) {
        const res = await app.request('GET', `/v2/audit-log${bad}`);
        assert.equal(res.statusCode, 400, bad);
      }
      // Entries are never changed or deleted through the API.
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
        assert.equal((await app.request(method, '/v2/audit-log', { body: {} })).statusCode, 405, method);
        assert.equal((await app.request(method, `/v2/audit-log/${all[0]!.id}`, { body: {} })).statusCode, 404, method);
      }
      // The log is read with audit:read only.
      assert.equal((await app.request('GET', '/v2/audit-log', { key: reader })).statusCode, 403);
    });

    test('a change\'s entry commits with it: recorded even when entries written after the response cannot be', async (t) => {
      const app = await createTestApp({ backend });
      t.after(() => app.close());
      const insert = app.stores.audit.insert.bind(app.stores.audit);
      let refused = 0;
      app.stores.audit.insert = async () => {
        refused++;
        throw new Error('the audit table cannot be written after the response');
      };
      await app.registerVehicle('van-1');
      assert.equal((await app.request('PATCH', '/v2/fleet/vehicles/van-1', { body: { name: 'one' } })).statusCode, 200);
      assert.equal((await app.request('DELETE', '/v2/fleet/vehicles/van-1')).statusCode, 204);
      assert.equal((await app.request('DELETE', '/v2/fleet/vehicles/van-1')).statusCode, 404);
      await app.app.auditFlush();
      assert.ok(refused >= 1, 'the 404 was to be written after the response');
      app.stores.audit.insert = insert;
      const all = await entries(app);
      // The list request itself writes nothing (a read); the 404's entry was lost with the failed write.
      assert.deepEqual(all.map((e) => `${e.action} ${e.status}`), ['vehicle.deleted 204', 'vehicle.updated 200', 'vehicle.created 201']);
    });
  });
}

test('sign-ins: succeeded (the person), failed (their organization), unknown (only the platform organization sees it)', async (t) => {
  const app = await createTestApp();
  t.after(() => app.close());
  const other = await app.otherOrganization();
  const invited = await app.request('POST', '/v2/users', { key: other.key, body: { email: 'dana@example.com', name: 'Dana', role: 'admin' } });
  assert.equal(invited.statusCode, 201, invited.body);
  const userId = invited.json().id;
  const accepted = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: invited.json().invitation.token, password: PASSWORD } });
  assert.equal(accepted.statusCode, 200);
  const login = (email: string, password: string) => app.request('POST', '/auth/login', { key: null, body: { email, password } });
  assert.equal((await login('dana@example.com', 'wrong password here')).statusCode, 401);
  const signedIn = await login('DANA@example.com', PASSWORD);
  assert.equal(signedIn.statusCode, 200);
  assert.equal((await login('nobody@example.com', PASSWORD)).statusCode, 401);
  // A change made with the session names the person.
  const browser = { cookie: cookieOf(signedIn), 'x-csrf-token': signedIn.json().csrfToken };
  assert.equal((await app.request('POST', '/v2/fleet/vehicles', { key: null, headers: browser, body: { vehicleId: 'v-1', type: 'van' } })).statusCode, 201);
  assert.equal((await app.request('POST', '/auth/logout', { key: null, headers: browser })).statusCode, 204);

  const theirs = await entries(app, '', other.key);
  assert.deepEqual(theirs.map((e) => `${e.action} ${e.outcome} ${e.actor.type}:${e.actor.name} ${e.resource.type}:${e.resource.id}`), [
    `session.logout succeeded user:Dana session:${userId}`,
    'vehicle.created succeeded user:Dana vehicle:v-1',
    `session.login succeeded user:Dana session:${userId}`,
    `session.login_failed denied anonymous:null session:${userId}`,
    `user.invitation_accepted succeeded user:Dana user:${userId}`,
    `user.invited succeeded apiKey:First admin key user:${userId}`,
  ]);
  // The platform organization sees the attempt naming nobody; the other organization does not.
  const platform = await entries(app, '?action=session.login_failed');
  assert.equal(platform.length, 1);
  assert.equal(platform[0]!.resource.id, null);
  assert.equal(theirs.filter((e) => e.resource.id === null).length, 0);
  assert.equal((await entries(app, '?action=user.invited')).length, 0, 'another organization\'s entries are not listed');
});

test('no secret reaches an entry: keys, webhook and client secrets, passwords, invitation tokens, TOTP secrets and codes', async (t) => {
  const app = await createTestApp();
  t.after(() => app.close());
  const secrets: string[] = [app.adminKey, PASSWORD];
  const created = async (method: 'POST' | 'PUT', url: string, body: unknown, headers: Record<string, string> = {}, key: string | null = app.adminKey) => {
    const res = await app.request(method, url, { body, headers, key });
    assert.ok(res.statusCode < 300, `${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  secrets.push((await created('POST', '/v2/api-keys', { name: 'k', scopes: ['fleet:read'] })).key);
  const webhook = await created('POST', '/v2/webhooks', { url: 'https://example.com/h', eventTypes: ['*'] });
  secrets.push(webhook.secret, (await created('POST', `/v2/webhooks/${webhook.id}/rotate-secret`, {})).secret);
  secrets.push((await created('POST', '/v2/oauth-clients', { name: 'c', scopes: ['fleet:read'] })).clientSecret);
  const invited = await created('POST', '/v2/users', { email: 'ada@example.com', name: 'Ada', role: 'viewer' });
  secrets.push(invited.invitation.token);
  const accepted = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: invited.invitation.token, password: PASSWORD } });
  const browser = { cookie: cookieOf(accepted), 'x-csrf-token': accepted.json().csrfToken };
  secrets.push(browser.cookie.split('=')[1]!, browser['x-csrf-token']);
  const totp = await created('POST', '/auth/totp', {}, browser, null);
  secrets.push(totp.secret);
  // A wrong code: refused, and the code sent is not kept either.
  assert.equal((await app.request('POST', '/auth/totp/confirm', { key: null, headers: browser, body: { code: '000000' } })).statusCode, 401);
  assert.equal((await app.request('POST', '/auth/password', { key: null, headers: browser, body: { currentPassword: PASSWORD, newPassword: 'another long passphrase' } })).statusCode, 204);
  secrets.push('another long passphrase');
  assert.equal((await app.request('POST', '/auth/login', { key: null, body: { email: 'ada@example.com', password: 'a guessed passphrase' } })).statusCode, 401);
  secrets.push('a guessed passphrase');

  await app.app.auditFlush();
  const db = new DatabaseSync(app.file, { readOnly: true });
  t.after(() => db.close());
  const stored = JSON.stringify(db.prepare('SELECT * FROM audit_log').all());
  assert.ok(stored.length > 1000, 'entries were written');
  for (const secret of secrets) {
    assert.equal(typeof secret, 'string');
    assert.ok(!stored.includes(secret), `a secret reached the audit log: ${secret.slice(0, 6)}…`);
  }
  assert.ok(!stored.includes('000000'));
});

test('entries older than the retention period are deleted; newer ones stay', async (t) => {
  const clock = manualClock(Date.parse('2026-01-01T00:00:00Z'));
  const app = await createTestApp({ clock });
  t.after(() => app.close());
  await app.registerVehicle('old');
  clock.advance(40 * 86_400_000);
  await app.registerVehicle('new');
  const retention = startAuditRetention({ store: app.stores.audit, clock, retentionDays: 30, log: { error: () => assert.fail('no error') }, intervalMs: 3_600_000 });
  t.after(() => retention.stop());
  assert.equal(await retention.runOnce(), 1);
  assert.deepEqual((await entries(app)).map((e) => e.resource.id), ['new']);
  assert.equal(await retention.runOnce(), 0);
});
