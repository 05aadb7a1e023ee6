// The behaviour every OAuthStore must have. Each adapter's test file calls oauthStoreContract with
// a factory that opens a fresh store holding two organizations.
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { OAuthClientRecord, OAuthStore, SigningKeyRecord } from '../../src/auth/oauth/store.ts';

const T0 = Date.parse('2026-11-22T08:00:00.000Z');

export interface OAuthStoreFixture {
  store: OAuthStore;
  /** Two existing organizations, the first the platform organization. */
  organizations: [string, string];
  close(): Promise<void>;
}

export function oauthStoreContract(name: string, open: () => Promise<OAuthStoreFixture>): void {
  describe(`OAuthStore contract: ${name}`, () => {
    const opened: OAuthStoreFixture[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((f) => f.close()));
    });
    async function fresh() {
      const fixture = await open();
      opened.push(fixture);
      return fixture;
    }

    let n = 0;
    const key = (createdAt: number): SigningKeyRecord => ({
      kid: `kid-${++n}`, algorithm: 'ES256', privateJwk: `{"d":"${n}"}`, publicJwk: `{"x":"${n}"}`, createdAt, retiredAt: null,
    });
    const client = (organizationId: string, createdAt = T0, id = `oc_${String(++n).padStart(22, '0')}`): OAuthClientRecord => ({
      id, organizationId, name: `client ${id}`, secretHash: new Uint8Array(32).fill(n % 256), scopes: ['fleet:read', 'admin'], groupIds: null,
      createdAt, createdBy: 'key_test',
    });

    test('the first signing key is stored once, however many processes race to make it', async () => {
      const { store } = await fresh();
      assert.deepEqual(await store.listSigningKeys(), []);
      const first = key(T0);
      const results = await Promise.all([store.addFirstSigningKey(first), store.addFirstSigningKey(key(T0)), store.addFirstSigningKey(key(T0))]);
      assert.deepEqual(results.filter(Boolean).length, 1);
      const keys = await store.listSigningKeys();
      assert.equal(keys.length, 1);
      assert.equal(keys[0]!.retiredAt, null);
    });

    test('rotation retires the signer, drops keys retired long enough ago, and stores the new one', async () => {
      const { store } = await fresh();
      const a = key(T0);
      assert.equal(await store.addFirstSigningKey(a), true);
      const b = key(T0 + 1000);
      await store.rotateSigningKey(b, T0);
      let keys = await store.listSigningKeys();
      assert.deepEqual(keys.map((k) => [k.kid, k.retiredAt]), [[a.kid, T0 + 1000], [b.kid, null]]);
      assert.deepEqual(keys[0], { ...a, retiredAt: T0 + 1000 }, 'stored as given');
      assert.equal(await store.addFirstSigningKey(key(T0 + 1500)), false, 'there is a signer');

      const c = key(T0 + 2000);
      await store.rotateSigningKey(c, T0 + 1001); // a (retired at T0+1000) goes; b (retiring now) stays
      keys = await store.listSigningKeys();
      assert.deepEqual(keys.map((k) => [k.kid, k.retiredAt]), [[b.kid, T0 + 2000], [c.kid, null]]);
    });

    test('clients: insert under a quota, list oldest first, get and delete only within their organization', async () => {
      const { store, organizations: [a, b] } = await fresh();
      const first = client(a, T0 + 2);
      const second = client(a, T0 + 1);
      assert.equal(await store.insertClient(first, 2), 'created');
      assert.equal(await store.insertClient(second, 2), 'created');
      assert.equal(await store.insertClient(client(a), 2), 'quota', 'quota reached');
      assert.equal(await store.insertClient(client(b), 2), 'created', 'another organization counts apart');
      assert.equal(await store.insertClient(client(b), 0), 'quota', 'a quota of 0 allows none');

      assert.deepEqual((await store.listClients(a)).map((c) => c.id), [second.id, first.id]);
      const got = await store.getClient(a, first.id);
      assert.deepEqual({ ...got, secretHash: Buffer.from(got!.secretHash) }, { ...first, secretHash: Buffer.from(first.secretHash) });
      assert.equal(await store.getClient(b, first.id), undefined);

      const found = await store.findClient(first.id);
      assert.equal(found?.client.id, first.id);
      assert.equal(found?.organization.id, a);
      assert.equal(found?.organization.platform, true);
      assert.equal(await store.findClient('oc_nobody'), undefined);

      assert.equal(await store.deleteClient(b, first.id), false, 'not from another organization');
      assert.equal(await store.deleteClient(a, first.id), true);
      assert.equal(await store.deleteClient(a, first.id), false);
      assert.equal(await store.findClient(first.id), undefined);
      assert.equal(await store.insertClient(client(a), 2), 'created', 'deleting freed a place');
    });

    test('concurrent inserts never pass the quota', async () => {
      const { store, organizations: [a] } = await fresh();
      const results = await Promise.all(Array.from({ length: 10 }, () => store.insertClient(client(a), 3)));
      assert.equal(results.filter((r) => r === 'created').length, 3);
      assert.equal((await store.listClients(a)).length, 3);
    });

    test('revoked tokens are remembered until they expire, then forgotten', async () => {
      const { store } = await fresh();
      await store.revokeToken('jti-1', T0 + 1000, T0);
      await store.revokeToken('jti-1', T0 + 1000, T0); // twice is fine
      await store.revokeToken('jti-2', T0 + 5000, T0);
      assert.equal(await store.isTokenRevoked('jti-1'), true);
      assert.equal(await store.isTokenRevoked('jti-3'), false);
      await store.revokeToken('jti-3', T0 + 9000, T0 + 2000); // prunes jti-1, whose token has expired
      assert.equal(await store.isTokenRevoked('jti-1'), false);
      assert.equal(await store.isTokenRevoked('jti-2'), true);
      assert.equal(await store.isTokenRevoked('jti-3'), true);
    });
  });
}
