// The behaviour every AuthStore must have (SQLite, PostgreSQL): test/store-contracts.test.ts runs
// it against each backend.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ApiKeyRecord, OrganizationRecord } from '../../src/auth/store.ts';
import type { Stores } from '../../src/storage/stores.ts';
import { type MakeStores, T0, addOrganization, freshStores, keyRecord } from './fixtures.ts';

/** Uint8Array and Buffer compare alike. */
const plain = (key: ApiKeyRecord | undefined) => (key === undefined ? undefined : { ...key, hash: Buffer.from(key.hash) });

export interface AuthContractOptions {
  /** More stores on the same database as `stores` (another node); the test closes them. */
  anotherNode?: (stores: Stores) => Promise<Stores>;
}

export function authStoreContract(name: string, makeStores: MakeStores, options: AuthContractOptions = {}): void {
  describe(`AuthStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    const platformOrg = (id: string): OrganizationRecord => ({ id, name: 'Default organization', platform: true, createdAt: T0 });

    test('the first organization is created only while the store holds none', async () => {
      const stores = await fresh();
      const first = platformOrg('org_first');
      const key = keyRecord(first.id);
      assert.equal(await stores.auth.createFirstOrganization(first, key), true);
      assert.deepEqual(await stores.auth.getOrganization(first.id), first);
      assert.deepEqual(plain((await stores.auth.findKey(key.lookupId))?.key), plain(key));

      const second = platformOrg('org_second');
      const secondKey = keyRecord(second.id);
      assert.equal(await stores.auth.createFirstOrganization(second, secondKey), false);
      assert.equal(await stores.auth.getOrganization(second.id), undefined);
      assert.equal(await stores.auth.findKey(secondKey.lookupId), undefined, 'nor its key');
      assert.equal(await stores.auth.countOrganizations(), 1);
    });

    test('concurrent first organizations: exactly one is created', async () => {
      const stores = await fresh();
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => stores.auth.createFirstOrganization(platformOrg(`org_race${i}`), keyRecord(`org_race${i}`))),
      );
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await stores.auth.countOrganizations(), 1);
    });

    test('two nodes starting together on one empty database: exactly one creates the first organization', { skip: options.anotherNode === undefined }, async () => {
      const stores = await fresh();
      const other = await options.anotherNode!(stores);
      try {
        const nodes = [stores, other, stores, other];
        const results = await Promise.all(
          nodes.map((node, i) => node.auth.createFirstOrganization(platformOrg(`org_node${i}`), keyRecord(`org_node${i}`))),
        );
        assert.equal(results.filter(Boolean).length, 1, `created: ${results.join(', ')}`);
        const winner = `org_node${results.indexOf(true)}`;
        for (const node of [stores, other]) {
          assert.equal(await node.auth.countOrganizations(), 1);
          assert.equal((await node.auth.getOrganization(winner))?.platform, true);
        }
      } finally {
        await other.close();
      }
    });

    test('an organization and its first key are stored together, and the key is found with its organization', async () => {
      const stores = await fresh();
      assert.equal(await stores.auth.countOrganizations(), 0);
      const org: OrganizationRecord = { id: 'org_platform', name: 'Platform', platform: true, createdAt: T0 };
      const key = keyRecord(org.id, { expiresAt: T0 + 60_000, scopes: ['admin', 'fleet:read', 'telemetry:write'] });
      await stores.auth.createOrganizationWithKey(org, key);
      assert.equal(await stores.auth.countOrganizations(), 1);
      assert.deepEqual(await stores.auth.getOrganization(org.id), org);
      assert.equal(await stores.auth.getOrganization('org_nobody'), undefined);

      const found = await stores.auth.findKey(key.lookupId);
      assert.deepEqual(plain(found?.key), plain(key));
      assert.ok(found!.key.hash instanceof Uint8Array);
      assert.deepEqual(found?.organization, org);
      assert.equal(await stores.auth.findKey('no-such-lookup'), undefined);
    });

    test('if the key cannot be stored, neither is the organization', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const taken = keyRecord(a);
      await stores.auth.insertKey(taken);
      const org: OrganizationRecord = { id: 'org_half', name: 'Half', platform: false, createdAt: T0 };
      await assert.rejects(stores.auth.createOrganizationWithKey(org, keyRecord(org.id, { lookupId: taken.lookupId })));
      assert.equal(await stores.auth.getOrganization(org.id), undefined);
      assert.equal(await stores.auth.countOrganizations(), 1);
    });

    test('organizations are listed oldest first, paged, with the total', async () => {
      const stores = await fresh();
      for (const [id, createdAt] of [['org_c', T0 + 2], ['org_b', T0 + 1], ['org_a', T0 + 2]] as const) {
        await addOrganization(stores, { id, createdAt });
      }
      const page = await stores.auth.listOrganizations({ limit: 2, offset: 0 });
      assert.deepEqual(page.organizations.map((o) => o.id), ['org_b', 'org_a']);
      assert.equal(page.total, 3);
      assert.deepEqual((await stores.auth.listOrganizations({ limit: 2, offset: 2 })).organizations.map((o) => o.id), ['org_c']);
    });

    test('keys: live ones listed oldest first and read only within their organization; revoking is once', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const first = (await stores.auth.listKeys(a, { limit: 10, offset: 0 })).keys[0]!;
      const later = keyRecord(a, { createdAt: T0 + 10 });
      const earlier = keyRecord(a, { createdAt: T0 + 5 });
      assert.equal(await stores.auth.insertKey(later), 'created');
      assert.equal(await stores.auth.insertKey(earlier), 'created');
      const listed = await stores.auth.listKeys(a, { limit: 10, offset: 0 });
      assert.deepEqual(listed.keys.map((k) => k.id), [first.id, earlier.id, later.id]);
      assert.equal(listed.total, 3);
      assert.deepEqual((await stores.auth.listKeys(a, { limit: 1, offset: 1 })).keys.map((k) => k.id), [earlier.id]);

      assert.deepEqual(plain(await stores.auth.getKey(a, later.id)), plain(later));
      assert.equal(await stores.auth.getKey(b, later.id), undefined, 'not from another organization');
      assert.equal(await stores.auth.revokeKey(b, later.id, T0 + 20), undefined, 'nor revoked by it');

      const revoked = await stores.auth.revokeKey(a, later.id, T0 + 20);
      assert.deepEqual(plain(revoked), plain({ ...later, revokedAt: T0 + 20 }));
      assert.equal(await stores.auth.revokeKey(a, later.id, T0 + 30), undefined, 'only once');
      assert.equal(await stores.auth.getKey(a, later.id), undefined);
      assert.equal((await stores.auth.listKeys(a, { limit: 10, offset: 0 })).total, 2);
      assert.equal((await stores.auth.findKey(later.lookupId))?.key.revokedAt, T0 + 20, 'found, revoked, for the caller to refuse');
    });

    test('touchKey records the last use', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const key = keyRecord(a);
      await stores.auth.insertKey(key);
      await stores.auth.touchKey(key.id, T0 + 99);
      assert.equal((await stores.auth.findKey(key.lookupId))?.key.lastUsedAt, T0 + 99);
    });

    test('the key quota counts live keys only, per organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)]; // one key each already
      const second = keyRecord(a);
      assert.equal(await stores.auth.insertKey(second, 2), 'created');
      assert.equal(await stores.auth.insertKey(keyRecord(a), 2), 'quota');
      assert.equal(await stores.auth.insertKey(keyRecord(b), 2), 'created', 'another organization counts apart');
      await stores.auth.revokeKey(a, second.id, T0);
      assert.equal(await stores.auth.insertKey(keyRecord(a), 2), 'created', 'a revoked key frees its place');
      assert.equal(await stores.auth.insertKey(keyRecord(a)), 'created', 'no quota given: no limit');
    });

    test('concurrent inserts never pass the quota', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const results = await Promise.all(Array.from({ length: 10 }, () => stores.auth.insertKey(keyRecord(a), 4)));
      assert.equal(results.filter((r) => r === 'created').length, 3);
      assert.equal((await stores.auth.listKeys(a, { limit: 100, offset: 0 })).total, 4);
    });
  });
}
