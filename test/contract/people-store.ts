// The behaviour every PeopleStore must have. Each adapter's test file calls peopleStoreContract with
// a factory that opens a fresh store holding two organizations. Races run as Promise.all on one
// store: on PostgreSQL they are statements on separate connections, as two nodes would send them.
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { PeopleStore, SessionRecord, UserRecord } from '../../src/people/store.ts';

const T0 = Date.parse('2026-11-22T08:00:00.000Z');
const DAY = 86_400_000;

export interface PeopleStoreFixture {
  store: PeopleStore;
  /** Two existing organizations. */
  organizations: [string, string];
  close(): Promise<void>;
}

export function peopleStoreContract(name: string, open: () => Promise<PeopleStoreFixture>): void {
  describe(`PeopleStore contract: ${name}`, () => {
    const opened: PeopleStoreFixture[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((f) => f.close()));
    });
    async function fresh() {
      const fixture = await open();
      opened.push(fixture);
      return fixture;
    }

    let n = 0;
    const user = (organizationId: string, overrides: Partial<UserRecord> = {}): UserRecord => {
      const id = `usr_${String(++n).padStart(22, '0')}`;
      const email = overrides.email ?? `Person.${n}@Example.com`;
      return {
        id, organizationId, email, emailKey: email.toLowerCase(), name: `Person ${n}`, role: 'viewer', groupIds: null,
        status: 'active', passwordHash: `hash-${n}`, totpSecret: null, totpEnabled: false, sso: false,
        createdAt: T0 + n, updatedAt: T0 + n, lastLoginAt: null, ...overrides,
      };
    };
    const invite = (expiresAt = T0 + 7 * DAY) => ({ tokenHash: `token-${++n}`, expiresAt });
    const session = (u: UserRecord, overrides: Partial<SessionRecord> = {}): SessionRecord => ({
      idHash: `session-${++n}`, userId: u.id, organizationId: u.organizationId, csrfToken: `csrf-${n}`,
      createdAt: T0, lastSeenAt: T0, expiresAt: T0 + 7 * DAY, ...overrides,
    });
    /** Stores `u` with an invitation of its own. */
    async function add(store: PeopleStore, u: UserRecord): Promise<UserRecord> {
      assert.equal(await store.insertUser(u, invite()), true);
      return u;
    }

    test('users are stored as given; an email is taken across organizations, whatever its case', async () => {
      const { store, organizations: [a, b] } = await fresh();
      const first = user(a, { email: 'Ada@Example.com', groupIds: ['grp_1', 'grp_2'], status: 'invited', passwordHash: null });
      const token = invite();
      assert.equal(await store.insertUser(first, token), true);
      assert.deepEqual(await store.getUser(a, first.id), first);
      assert.deepEqual(await store.findUserByEmail('ada@example.com'), first);
      assert.equal(await store.getUser(b, first.id), undefined, 'not from another organization');
      assert.equal(await store.findUserByEmail('bob@example.com'), undefined);

      const again = user(b, { email: 'ADA@example.COM', status: 'invited', passwordHash: null });
      const againToken = invite();
      assert.equal(await store.insertUser(again, againToken), false, 'taken in another organization');
      assert.equal(await store.insertUser(user(a, { email: 'ada@example.com' }), invite()), false, 'and in the same one');
      assert.equal(await store.getUser(b, again.id), undefined);
      assert.equal(await store.acceptInvitation(againToken.tokenHash, 'pw', T0), undefined, 'nor was its invitation stored');
      assert.deepEqual(await store.findUserByEmail('ada@example.com'), first);

      const empty = await add(store, user(b, { groupIds: [], sso: true, totpEnabled: true, totpSecret: 'JBSWY3DP' }));
      assert.deepEqual(await store.getUser(b, empty.id), empty, 'an empty group list is not the whole organization');
    });

    test('concurrent inserts of one email: exactly one is stored', async () => {
      const { store, organizations: [a, b] } = await fresh();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => store.insertUser(user(i % 2 === 0 ? a : b, { email: i % 2 === 0 ? 'race@example.com' : 'RACE@example.com' }), invite())),
      );
      assert.equal(results.filter(Boolean).length, 1);
    });

    test('users are listed oldest first, a page at a time, with the organization\'s total', async () => {
      const { store, organizations: [a, b] } = await fresh();
      const made = [];
      for (const createdAt of [T0 + 30, T0 + 10, T0 + 50, T0 + 20, T0 + 40]) made.push(await add(store, user(a, { createdAt })));
      await add(store, user(b));
      const oldestFirst = [...made].sort((x, y) => x.createdAt - y.createdAt).map((u) => u.id);

      const all = await store.listUsers(a, { limit: 10, offset: 0 });
      assert.deepEqual(all.users.map((u) => u.id), oldestFirst);
      assert.equal(all.total, 5);
      const page = await store.listUsers(a, { limit: 2, offset: 1 });
      assert.deepEqual(page.users.map((u) => u.id), oldestFirst.slice(1, 3));
      assert.equal(page.total, 5);
      assert.deepEqual(await store.listUsers(a, { limit: 2, offset: 5 }), { users: [], total: 5 });
      assert.equal((await store.listUsers(b, { limit: 10, offset: 0 })).total, 1);
    });

    test('a patch changes what it names and nothing else', async () => {
      const { store, organizations: [a, b] } = await fresh();
      const u = await add(store, user(a, { groupIds: ['grp_1'] }));
      const renamed = await store.updateUser(a, u.id, { name: 'Grace' }, T0 + 1000);
      assert.deepEqual(renamed, { ...u, name: 'Grace', updatedAt: T0 + 1000 });
      const regrouped = await store.updateUser(a, u.id, { role: 'manager', groupIds: null }, T0 + 2000);
      assert.deepEqual(regrouped, { ...u, name: 'Grace', role: 'manager', groupIds: null, updatedAt: T0 + 2000 });
      assert.deepEqual(await store.getUser(a, u.id), regrouped);
      const limited = await store.updateUser(a, u.id, { groupIds: ['grp_2', 'grp_3'] }, T0 + 3000);
      assert.deepEqual(typeof limited === 'object' && limited.groupIds, ['grp_2', 'grp_3']);
      assert.equal(await store.updateUser(a, u.id, { groupIds: ['grp_2', 'grp_nowhere'] }, T0 + 4000), 'unknown-group', 'every group must exist');
      assert.equal(await store.insertUser(user(a, { groupIds: ['grp_nowhere'] }), invite()), 'unknown-group');
      assert.equal(await store.insertUser(user(b, { groupIds: ['grp_1'] }), invite()), 'unknown-group', 'another organization\'s group is none');
      assert.deepEqual((await store.getUser(a, u.id))?.groupIds, ['grp_2', 'grp_3']);
      assert.equal(await store.updateUser(b, u.id, { name: 'Mallory' }, T0), undefined, 'not from another organization');
      assert.equal(await store.updateUser(a, 'usr_nobody', { name: 'Nobody' }, T0), undefined);
      assert.equal((await store.getUser(a, u.id))?.name, 'Grace');
    });

    test('the last active admin cannot be demoted, disabled or deleted; a second active admin lets it pass', async () => {
      const { store, organizations: [a, b] } = await fresh();
      const admin = await add(store, user(a, { role: 'admin' }));
      // Admins that are not active do not count, nor does an active admin of another organization.
      await add(store, user(a, { role: 'admin', status: 'disabled' }));
      const invitedToken = invite();
      const invited = user(a, { role: 'admin', status: 'invited', passwordHash: null });
      assert.equal(await store.insertUser(invited, invitedToken), true);
      await add(store, user(b, { role: 'admin' }));

      assert.equal(await store.updateUser(a, admin.id, { role: 'manager' }, T0), 'last-admin');
      assert.equal(await store.updateUser(a, admin.id, { status: 'disabled' }, T0), 'last-admin');
      assert.equal(await store.deleteUser(a, admin.id), 'last-admin');
      assert.deepEqual(await store.getUser(a, admin.id), admin, 'unchanged');
      assert.deepEqual(await store.updateUser(a, admin.id, { name: 'Still admin', role: 'admin', status: 'active' }, T0 + 1),
        { ...admin, name: 'Still admin', updatedAt: T0 + 1 }, 'a change that keeps it an active admin passes');
      assert.equal(await store.deleteUser(a, 'usr_nobody'), undefined);
      assert.equal(await store.deleteUser(b, admin.id), undefined, 'not from another organization');

      // The invited admin accepts: now there are two.
      assert.equal((await store.acceptInvitation(invitedToken.tokenHash, 'pw', T0 + 2))?.status, 'active');
      const demoted = await store.updateUser(a, admin.id, { role: 'operator' }, T0 + 3);
      assert.equal(typeof demoted === 'object' && demoted.role, 'operator');
      assert.equal(await store.updateUser(a, invited.id, { status: 'disabled' }, T0 + 4), 'last-admin', 'now the other is the last');

      assert.notEqual(await store.updateUser(a, admin.id, { role: 'admin' }, T0 + 5), 'last-admin');
      const disabled = await store.updateUser(a, admin.id, { status: 'disabled' }, T0 + 6);
      assert.equal(typeof disabled === 'object' && disabled.status, 'disabled');
      assert.notEqual(await store.updateUser(a, admin.id, { status: 'active' }, T0 + 7), 'last-admin');
      assert.deepEqual(await store.deleteUser(a, invited.id), { ...invited, status: 'active', passwordHash: 'pw', updatedAt: T0 + 2 });
      assert.equal(await store.getUser(a, invited.id), undefined);
      assert.equal(await store.deleteUser(a, admin.id), 'last-admin');
    });

    test('two admins demoted, disabled or deleted at once: one of them stays an active admin', async () => {
      const { store, organizations: [a] } = await fresh();
      const changes = [
        (id: string) => store.updateUser(a, id, { role: 'viewer' }, T0 + 100),
        (id: string) => store.updateUser(a, id, { status: 'disabled' }, T0 + 100),
        (id: string) => store.deleteUser(a, id),
      ];
      let survivor: string | undefined;
      for (const [i, first] of changes.entries()) {
        for (const second of changes.slice(i)) {
          const x = await add(store, user(a, { role: 'admin' }));
          const y = await add(store, user(a, { role: 'admin' }));
          // The pair is alone: the survivor of the pair before goes.
          if (survivor !== undefined) assert.deepEqual((await store.deleteUser(a, survivor)) !== 'last-admin', true);
          const results = await Promise.all([first(x.id), second(y.id)]);
          assert.equal(results.filter((r) => r === 'last-admin').length, 1, `exactly one is refused: ${JSON.stringify(results)}`);
          const { users } = await store.listUsers(a, { limit: 100, offset: 0 });
          const admins = users.filter((u) => u.role === 'admin' && u.status === 'active');
          assert.equal(admins.length, 1);
          survivor = admins[0]!.id;
          assert.ok([x.id, y.id].includes(survivor));
        }
      }
    });

    test('an invitation is used once, before it expires; a new one replaces it', async () => {
      const { store, organizations: [a] } = await fresh();
      const first = invite(T0 + DAY);
      const u = user(a, { status: 'invited', passwordHash: null });
      assert.equal(await store.insertUser(u, first), true);

      const second = invite(T0 + 2 * DAY);
      await store.replaceInvitation(u.id, second);
      assert.equal(await store.acceptInvitation(first.tokenHash, 'pw', T0), undefined, 'the old token stops working');
      assert.equal(await store.acceptInvitation('token-unknown', 'pw', T0), undefined);
      assert.equal(await store.acceptInvitation(second.tokenHash, 'pw', T0 + 2 * DAY), undefined, 'expired at its end');
      assert.deepEqual(await store.getUser(a, u.id), u, 'nothing changed');

      const accepted = await store.acceptInvitation(second.tokenHash, 'pw-hash', T0 + 2 * DAY - 1);
      assert.deepEqual(accepted, { ...u, status: 'active', passwordHash: 'pw-hash', updatedAt: T0 + 2 * DAY - 1 });
      assert.deepEqual(await store.getUser(a, u.id), accepted);
      assert.equal(await store.acceptInvitation(second.tokenHash, 'other', T0 + 2 * DAY - 1), undefined, 'used');

      // An active user's invitation (a reset) sets the password and leaves the status as it is.
      const third = invite(T0 + 3 * DAY);
      await store.replaceInvitation(u.id, third);
      const reset = await store.acceptInvitation(third.tokenHash, 'pw-new', T0 + 2 * DAY);
      assert.equal(reset?.status, 'active');
      assert.equal(reset?.passwordHash, 'pw-new');
    });

    test('an invitation accepted many times at once is used exactly once', async () => {
      const { store, organizations: [a] } = await fresh();
      const token = invite();
      const u = user(a, { status: 'invited', passwordHash: null });
      assert.equal(await store.insertUser(u, token), true);
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => store.acceptInvitation(token.tokenHash, `pw-${i}`, T0)));
      const winners = results.filter((r) => r !== undefined);
      assert.equal(winners.length, 1);
      assert.equal((await store.getUser(a, u.id))?.passwordHash, winners[0]!.passwordHash);
    });

    test('a disabled user cannot accept; the invitation stays for when they are enabled again', async () => {
      const { store, organizations: [a] } = await fresh();
      const token = invite();
      const u = user(a, { status: 'invited', passwordHash: null });
      assert.equal(await store.insertUser(u, token), true);
      assert.equal((await store.updateUser(a, u.id, { status: 'disabled' }, T0 + 1)) !== 'last-admin', true);
      assert.equal(await store.acceptInvitation(token.tokenHash, 'pw', T0 + 2), undefined);
      const stored = await store.getUser(a, u.id);
      assert.equal(stored?.status, 'disabled');
      assert.equal(stored?.passwordHash, null);
      await store.updateUser(a, u.id, { status: 'active' }, T0 + 3);
      assert.equal((await store.acceptInvitation(token.tokenHash, 'pw', T0 + 4))?.passwordHash, 'pw');
    });

    test('sessions: found with their user, touched, ended one by one or all but one', async () => {
      const { store, organizations: [a] } = await fresh();
      const u = await add(store, user(a));
      const other = await add(store, user(a));
      const s1 = session(u);
      const s2 = session(u);
      const s3 = session(u);
      const theirs = session(other);
      for (const s of [s1, s2, s3, theirs]) await store.insertSession(s);

      assert.deepEqual(await store.findSession(s1.idHash), { session: s1, user: u });
      assert.equal(await store.findSession('session-unknown'), undefined);
      await store.touchSession(s1.idHash, T0 + 5000);
      assert.deepEqual((await store.findSession(s1.idHash))?.session, { ...s1, lastSeenAt: T0 + 5000 });

      await store.deleteSession(s2.idHash);
      assert.equal(await store.findSession(s2.idHash), undefined);
      assert.ok(await store.findSession(s1.idHash));

      await store.insertSession(s2);
      await store.deleteUserSessions(u.id, s1.idHash);
      assert.ok(await store.findSession(s1.idHash), 'the kept one');
      assert.equal(await store.findSession(s2.idHash), undefined);
      assert.equal(await store.findSession(s3.idHash), undefined);
      assert.ok(await store.findSession(theirs.idHash), 'another user\'s');
      await store.deleteUserSessions(u.id);
      assert.equal(await store.findSession(s1.idHash), undefined);
      assert.ok(await store.findSession(theirs.idHash));

      // A session is found whatever its user's state: the caller judges.
      await store.insertSession(s3);
      await store.recordLogin(u.id, T0 + 9000);
      await store.setPassword(u.id, 'hash-changed', T0 + 9001);
      assert.deepEqual((await store.findSession(s3.idHash))?.user, { ...u, lastLoginAt: T0 + 9000, passwordHash: 'hash-changed', updatedAt: T0 + 9001 });
    });

    test('disabling a user ends their sessions; deleting one takes sessions, invitations and recovery codes with it', async () => {
      const { store, organizations: [a] } = await fresh();
      const u = await add(store, user(a));
      const kept = await add(store, user(a));
      const s = session(u);
      const keptSession = session(kept);
      await store.insertSession(s);
      await store.insertSession(keptSession);
      const renamed = await store.updateUser(a, u.id, { name: 'Renamed' }, T0 + 1);
      assert.equal(typeof renamed === 'object' && renamed.name, 'Renamed');
      assert.ok(await store.findSession(s.idHash), 'a change other than disabling keeps them');
      await store.updateUser(a, u.id, { status: 'disabled' }, T0 + 2);
      assert.equal(await store.findSession(s.idHash), undefined);
      assert.ok(await store.findSession(keptSession.idHash));

      const gone = user(a, { status: 'invited', passwordHash: null });
      const token = invite();
      assert.equal(await store.insertUser(gone, token), true);
      const goneSession = session(gone);
      await store.insertSession(goneSession);
      await store.enableTotp(gone.id, ['code-1'], T0 + 3);
      const deleted = await store.deleteUser(a, gone.id);
      assert.equal(typeof deleted === 'object' && deleted.id, gone.id);
      assert.equal(await store.getUser(a, gone.id), undefined);
      assert.equal(await store.findUserByEmail(gone.emailKey), undefined);
      assert.equal(await store.findSession(goneSession.idHash), undefined);
      assert.equal(await store.useRecoveryCode(gone.id, 'code-1'), false);
      assert.equal(await store.acceptInvitation(token.tokenHash, 'pw', T0 + 4), undefined);
      assert.equal(await store.deleteUser(a, gone.id), undefined, 'once');
      // Its email is free again.
      assert.equal(await store.insertUser(user(a, { email: gone.email }), invite()), true);
    });

    test('what can no longer be used is deleted: ended or idle sessions, expired invitations, old failures', async () => {
      const { store, organizations: [a] } = await fresh();
      const u = await add(store, user(a));
      const live = session(u, { idHash: 'live', lastSeenAt: T0 + 5000, expiresAt: T0 + DAY });
      const idle = session(u, { idHash: 'idle', lastSeenAt: T0 + 1000, expiresAt: T0 + DAY });
      const ended = session(u, { idHash: 'ended', lastSeenAt: T0 + 9000, expiresAt: T0 + 10_000 });
      for (const s of [live, idle, ended]) await store.insertSession(s);
      const kept = invite(T0 + DAY);
      const expired = invite(T0 + 10_000);
      await store.replaceInvitation(u.id, expired);
      const other = await add(store, user(a));
      await store.replaceInvitation(other.id, kept);
      await store.recordLoginFailure('ada@example.com', T0, 0);
      await store.recordLoginFailure('ada@example.com', T0 + 20_000, 0);

      // At T0 + 10 s: sessions idle since before T0 + 2 s, or ended, go; failures before T0 + 1 s go.
      assert.equal(await store.deleteExpired(T0 + 10_000, T0 + 2000, T0 + 1000), 4);
      assert.ok(await store.findSession(live.idHash));
      assert.equal(await store.findSession(idle.idHash), undefined);
      assert.equal(await store.findSession(ended.idHash), undefined);
      assert.equal(await store.acceptInvitation(expired.tokenHash, 'pw', T0), undefined, 'the expired invitation is gone');
      assert.deepEqual(await store.loginFailures('ada@example.com', 0), [T0 + 20_000]);
      assert.ok(await store.acceptInvitation(kept.tokenHash, 'pw', T0), 'the live invitation stays');
      assert.equal(await store.deleteExpired(T0 + 10_000, T0 + 2000, T0 + 1000), 0, 'nothing more');
    });

    test('failed sign-ins: counted per email since a time, the old ones forgotten, all cleared', async () => {
      const { store } = await fresh();
      await store.recordLoginFailure('ada@example.com', T0, T0 - 1000);
      await store.recordLoginFailure('ada@example.com', T0 + 100, T0 - 900);
      await store.recordLoginFailure('bob@example.com', T0 + 150, T0 - 850);
      await store.recordLoginFailure('ada@example.com', T0 + 200, T0 - 800);
      assert.deepEqual(await store.loginFailures('ada@example.com', T0), [T0, T0 + 100, T0 + 200]);
      assert.deepEqual(await store.loginFailures('ada@example.com', T0 + 100), [T0 + 100, T0 + 200]);
      assert.deepEqual(await store.loginFailures('bob@example.com', 0), [T0 + 150]);
      assert.deepEqual(await store.loginFailures('eve@example.com', 0), []);

      // Recording forgets what is older than `forgetBefore`, even when asked for from the start.
      await store.recordLoginFailure('ada@example.com', T0 + 1000, T0 + 100);
      assert.deepEqual(await store.loginFailures('ada@example.com', 0), [T0 + 100, T0 + 200, T0 + 1000]);
      assert.deepEqual(await store.loginFailures('bob@example.com', 0), [T0 + 150], 'another email\'s stay');

      await store.clearLoginFailures('ada@example.com');
      assert.deepEqual(await store.loginFailures('ada@example.com', 0), []);
      assert.deepEqual(await store.loginFailures('bob@example.com', 0), [T0 + 150]);
    });

    test('TOTP: enrolment, enabling with recovery codes, each code used once, ending it', async () => {
      const { store, organizations: [a] } = await fresh();
      const u = await add(store, user(a));
      await store.setTotpSecret(u.id, 'SECRET1', T0 + 1);
      assert.deepEqual(await store.getUser(a, u.id), { ...u, totpSecret: 'SECRET1', totpEnabled: false, updatedAt: T0 + 1 });

      await store.enableTotp(u.id, ['code-1', 'code-2'], T0 + 2);
      assert.deepEqual(await store.getUser(a, u.id), { ...u, totpSecret: 'SECRET1', totpEnabled: true, updatedAt: T0 + 2 });
      assert.equal(await store.useRecoveryCode(u.id, 'code-1'), true);
      assert.equal(await store.useRecoveryCode(u.id, 'code-1'), false, 'once');
      assert.equal(await store.useRecoveryCode(u.id, 'code-3'), false);

      const other = await add(store, user(a));
      await store.enableTotp(other.id, ['code-2'], T0 + 2);
      assert.equal(await store.useRecoveryCode(other.id, 'code-2'), true, 'the same hash for another user is theirs');
      assert.equal(await store.useRecoveryCode(u.id, 'code-2'), true);

      await store.enableTotp(u.id, ['code-4', 'code-5'], T0 + 3);
      await store.enableTotp(u.id, ['code-6'], T0 + 4);
      assert.equal(await store.useRecoveryCode(u.id, 'code-4'), false, 'replaced');
      assert.equal(await store.useRecoveryCode(u.id, 'code-6'), true);

      // A new enrolment turns TOTP off and deletes the codes; so does ending it.
      await store.enableTotp(u.id, ['code-7', 'code-8'], T0 + 5);
      await store.setTotpSecret(u.id, 'SECRET2', T0 + 6);
      assert.deepEqual(await store.getUser(a, u.id), { ...u, totpSecret: 'SECRET2', totpEnabled: false, updatedAt: T0 + 6 });
      assert.equal(await store.useRecoveryCode(u.id, 'code-7'), false);
      await store.enableTotp(u.id, ['code-9'], T0 + 7);
      await store.setTotpSecret(u.id, null, T0 + 8);
      assert.deepEqual(await store.getUser(a, u.id), { ...u, totpSecret: null, totpEnabled: false, updatedAt: T0 + 8 });
      assert.equal(await store.useRecoveryCode(u.id, 'code-9'), false);
    });

    test('a TOTP step is used once, and never one older than the newest used', async () => {
      const { store, organizations: [a] } = await fresh();
      const u = await add(store, user(a));
      const other = await add(store, user(a));
      await store.setTotpSecret(u.id, 'SECRET', T0);
      assert.equal(await store.useTotpStep(u.id, 100), true);
      assert.equal(await store.useTotpStep(u.id, 100), false, 'a replay');
      assert.equal(await store.useTotpStep(u.id, 99), false, 'an older step');
      assert.equal(await store.useTotpStep(other.id, 100), true, 'another user\'s steps are theirs');
      assert.equal(await store.useTotpStep(u.id, 101), true);
      assert.equal(await store.useTotpStep(u.id, 100), false);
      assert.equal(await store.useTotpStep('usr_nobody', 1), false);

      // A new secret starts afresh: its codes count from no step used.
      await store.setTotpSecret(u.id, 'SECRET2', T0 + 1);
      assert.equal(await store.useTotpStep(u.id, 50), true);
      assert.equal(await store.useTotpStep(u.id, 50), false);
    });

    test('one TOTP step or recovery code presented many times at once: exactly one wins', async () => {
      const { store, organizations: [a] } = await fresh();
      const u = await add(store, user(a));
      await store.setTotpSecret(u.id, 'SECRET', T0);
      await store.enableTotp(u.id, ['code-1'], T0);
      const steps = await Promise.all(Array.from({ length: 8 }, () => store.useTotpStep(u.id, 1000)));
      assert.equal(steps.filter(Boolean).length, 1);
      const presented = [1001, 1002, 1001, 1002, 1003];
      const mixed = await Promise.all(presented.map((step) => store.useTotpStep(u.id, step)));
      for (const step of [1001, 1002, 1003]) {
        assert.ok(presented.filter((s, i) => s === step && mixed[i]).length <= 1, `step ${step} at most once: ${mixed.join(', ')}`);
      }
      assert.ok(mixed.some(Boolean));
      assert.equal(await store.useTotpStep(u.id, 1003), false);
      const codes = await Promise.all(Array.from({ length: 8 }, () => store.useRecoveryCode(u.id, 'code-1')));
      assert.equal(codes.filter(Boolean).length, 1);
    });
  });
}
