// The behaviour every SsoStore must have, run on both backends by store-contracts.test.ts:
// configurations per organization, sign-ins under way taken once, and the users a provider signs in.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { UserRecord } from '../../src/people/store.ts';
import type { SsoConfigRecord } from '../../src/sso/store.ts';
import { type MakeStores, T0, addOrganization, freshStores } from './fixtures.ts';

let n = 0;

function config(organizationId: string, overrides: Partial<SsoConfigRecord> = {}): SsoConfigRecord {
  return {
    organizationId, issuer: 'https://login.example.com', clientId: 'fleet', clientSecret: 'secret', roleClaim: 'groups',
    roleMap: { admins: 'admin', dispatch: 'operator' }, allowedEmailDomains: null, createdAt: T0, updatedAt: T0, ...overrides,
  };
}

function candidate(organizationId: string, email: string, overrides: Partial<UserRecord> = {}): UserRecord {
  return {
    id: `usr_${String(++n).padStart(20, '0')}`, organizationId, email, emailKey: email.toLowerCase(), name: email, role: 'viewer',
    groupIds: null, status: 'active', passwordHash: null, totpSecret: null, totpEnabled: false, sso: true,
    createdAt: T0 + n, updatedAt: T0 + n, lastLoginAt: null, ...overrides,
  };
}

export function ssoStoreContract(name: string, makeStores: MakeStores): void {
  describe(`SsoStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    test('a configuration per organization: replaced keeping its createdAt, deleted once', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      assert.equal(await stores.sso.getConfig(a), undefined);
      assert.deepEqual(await stores.sso.putConfig(config(a)), config(a));
      const replaced = await stores.sso.putConfig(config(a, {
        issuer: 'https://other.example', clientSecret: 'new', roleClaim: 'roles', roleMap: { x: 'viewer' },
        allowedEmailDomains: ['example.com', 'example.org'], createdAt: T0 + 5, updatedAt: T0 + 5,
      }));
      assert.deepEqual(replaced, config(a, {
        issuer: 'https://other.example', clientSecret: 'new', roleClaim: 'roles', roleMap: { x: 'viewer' },
        allowedEmailDomains: ['example.com', 'example.org'], createdAt: T0, updatedAt: T0 + 5,
      }));
      assert.deepEqual(await stores.sso.getConfig(a), replaced);
      assert.equal(await stores.sso.getConfig(b), undefined);
      assert.equal(await stores.sso.deleteConfig(b), false);
      assert.equal(await stores.sso.deleteConfig(a), true);
      assert.equal(await stores.sso.deleteConfig(a), false);
      assert.equal(await stores.sso.getConfig(a), undefined);
    });

    test('a sign-in under way is taken once, on any connection, and not after it expires', async () => {
      const stores = await fresh();
      const org = await addOrganization(stores);
      const login = { idHash: 'h1', organizationId: org, state: 's', nonce: 'n', codeVerifier: 'v', returnTo: '/x', expiresAt: T0 + 600_000 };
      await stores.sso.insertLogin(login, T0);
      const taken = await Promise.all([stores.sso.takeLogin('h1', T0 + 1), stores.sso.takeLogin('h1', T0 + 1)]);
      assert.deepEqual(taken.filter((t) => t !== undefined), [login]);
      await stores.sso.insertLogin({ ...login, idHash: 'h2' }, T0);
      assert.equal(await stores.sso.takeLogin('h2', T0 + 600_000), undefined, 'expired');
      assert.equal(await stores.sso.takeLogin('h2', T0), undefined, 'gone once looked at');
      // Inserting forgets those expired.
      await stores.sso.insertLogin({ ...login, idHash: 'h3' }, T0);
      await stores.sso.insertLogin({ ...login, idHash: 'h4', expiresAt: T0 + 2_000_000 }, T0 + 700_000);
      assert.equal(await stores.sso.takeLogin('h3', T0), undefined);
      assert.equal((await stores.sso.takeLogin('h4', T0 + 700_000))?.idHash, 'h4');
    });

    test('signing a user in: created once, later given the provider\'s role; another organization\'s email or a disabled user refused', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const first = candidate(a, 'Ana@Example.com', { role: 'operator' });
      assert.deepEqual(await stores.sso.signInUser(first, T0), first);
      assert.deepEqual(await stores.people.getUser(a, first.id), first);

      const later = await stores.sso.signInUser(candidate(a, 'ana@example.com', { role: 'admin' }), T0 + 10);
      assert.deepEqual(later, { ...first, role: 'admin', updatedAt: T0 + 10 });
      assert.deepEqual(await stores.people.getUser(a, first.id), later);

      assert.equal(await stores.sso.signInUser(candidate(b, 'ANA@example.com'), T0 + 20), 'email-taken');
      assert.equal((await stores.people.getUser(a, first.id))?.role, 'admin');

      // An invited user of the organization becomes active; a disabled one stays out.
      const invited = candidate(a, 'bo@example.com', { status: 'invited', sso: false });
      assert.equal(await stores.people.insertUser(invited, { tokenHash: 'invite-bo', expiresAt: T0 + 1_000_000 }), true);
      const bo = await stores.sso.signInUser(candidate(a, 'bo@example.com', { role: 'manager' }), T0 + 30);
      assert.deepEqual(bo, { ...invited, role: 'manager', status: 'active', updatedAt: T0 + 30 });
      await stores.people.updateUser(a, invited.id, { status: 'disabled' }, T0 + 40);
      assert.equal(await stores.sso.signInUser(candidate(a, 'bo@example.com', { role: 'admin' }), T0 + 50), 'disabled');
      assert.equal((await stores.people.getUser(a, invited.id))?.role, 'manager');

      // Two first sign-ins of one email at once make one user.
      const [x, y] = await Promise.all([
        stores.sso.signInUser(candidate(a, 'cy@example.com'), T0 + 60),
        stores.sso.signInUser(candidate(a, 'cy@example.com'), T0 + 60),
      ]);
      assert.equal((x as UserRecord).id, (y as UserRecord).id);
      assert.equal((await stores.people.listUsers(a, { limit: 100, offset: 0 })).users.filter((u) => u.emailKey === 'cy@example.com').length, 1);

      // Ana is the organization's only active admin: the provider's lesser role is refused.
      assert.equal(await stores.sso.signInUser(candidate(a, 'ana@example.com', { role: 'viewer' }), T0 + 70), 'last-admin');
      assert.equal((await stores.people.getUser(a, first.id))?.role, 'admin');
      // Another active admin: now it applies.
      assert.notEqual(await stores.sso.signInUser(candidate(a, 'di@example.com', { role: 'admin' }), T0 + 80), 'last-admin');
      assert.equal(((await stores.sso.signInUser(candidate(a, 'ana@example.com', { role: 'viewer' }), T0 + 90)) as UserRecord).role, 'viewer');
    });
  });
}
