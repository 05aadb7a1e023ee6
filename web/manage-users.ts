// Users: invite a person (the invitation link shown once, with a copy button), list the
// organization's users, change a role, the groups a person is limited to, disable or enable,
// issue a new invitation (the reset an admin gives), delete. Needs the users scope.
// docs/API.md "Users and sessions", "Scoped credentials".
import { api, currentSession, encode, type InvitedUser, type Role, type User, type UserList } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { act, confirmButton, field, loading, onSubmit, panelHeader, problemBox, showSecret, select } from './forms.ts';
import { type Group, groupPicker, groupsUnreadable, limitText, readGroups } from './groups.ts';
import { ROLES } from './lists.ts';

const ROLE_TEXT: Record<Role, string> = {
  admin: 'admin — everything',
  manager: 'manager — the fleet, rules and alerts',
  operator: 'operator — watch the fleet, handle alerts',
  viewer: 'viewer — read only',
};

const PAGE = 100;

/** The hint of a user's group choice (the page's intro says what being limited means). */
const GROUPS_HELP = 'None chosen: the whole organization.';

/** The invitation link, shown once in `slot`: the person sets their password there. */
function showInvitation(slot: HTMLElement, title: string, invited: InvitedUser): HTMLElement {
  return showSecret(slot, {
    title,
    label: 'Invitation link',
    secret: invited.invitation.url,
    note: `Send this link to ${invited.email}; it sets a password once and works until ${formatTime(invited.invitation.expiresAt)}. It is not shown again.`,
  });
}

export function renderManageUsers(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const email = h('input', { type: 'email', autocomplete: 'off', spellcheck: 'false', maxlength: 254 });
  const name = h('input', { type: 'text', autocomplete: 'off', maxlength: 100 });
  const role = select(ROLES, { labels: ROLE_TEXT });
  role.value = 'viewer';
  /** Where the invitation's group choice goes once the groups are read. */
  const inviteGroups = h('div', {}, loading('Reading the groups…'));
  let invitePicker: ReturnType<typeof groupPicker> | undefined;
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const secretSlot = h('div');
  const form = h('form', { class: 'card form', 'aria-labelledby': 'invite-title', novalidate: true },
    h('h2', { id: 'invite-title' }, 'Invite a user'),
    field(email, { label: 'Email', path: '/email' }),
    field(name, { label: 'Name', path: '/name' }),
    field(role, { label: 'Role', path: '/role', help: 'What the person may do; you can change it later.' }),
    inviteGroups,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Invite')),
    feedback, secretSlot);
  /** The groups of one user, opened from their row. */
  const editor = h('div', { class: 'editor' });

  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  /** A new invitation of a listed user, shown once above the list. */
  const listSecret = h('div');
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table', 'aria-label': 'Users' },
    h('thead', {}, h('tr', {},
      ...['Name', 'Email', 'Role and groups', 'Status', 'Last sign-in', 'Two-factor', 'Actions'].map((text) => h('th', { scope: 'col' }, text)))),
    tbody);
  const more = h('p', { class: 'muted' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'users-title' },
    ...panelHeader('Users', 'users-title',
      'People who sign in to this organization with a password. An invited person sets their password with the link of their invitation; '
      + 'a new invitation is how to reset a forgotten password. A person limited to vehicle groups sees only those groups\' vehicles and keeps their role, '
      + 'without what acts on the whole organization (users, API keys, webhooks, the audit log, geofences and alert rules). Managing users needs the users scope.'),
    h('div', { class: 'manage-layout wide-list' },
      h('div', { class: 'manage-forms' }, form, editor),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Users'), listFeedback, listState, listSecret, h('div', { class: 'table-wrap' }, table), more))));

  onSubmit(form, feedback, async () => {
    replace(secretSlot);
    const body: Record<string, unknown> = { email: email.value.trim(), name: name.value.trim(), role: role.value };
    const groupIds = invitePicker?.value() ?? [];
    if (groupIds.length > 0) body.groupIds = groupIds;
    const invited = await api<InvitedUser>('POST', '/v2/users', { body });
    form.reset();
    role.value = 'viewer';
    showInvitation(secretSlot, `Invitation for ${invited.email}`, invited);
    void loadList();
  });

  /** The organization's groups, to name and to choose; undefined until read, or when they could not be. */
  let groups: Group[] | undefined;
  let groupsById = new Map<string, Group>();
  /** Why the groups could not be read, said where they would be chosen. */
  let groupsProblem: unknown;

  async function loadGroups() {
    try {
      groups = await readGroups(signal);
      groupsById = new Map(groups.map((g) => [g.id, g]));
      invitePicker = groupPicker(groups, [], { help: GROUPS_HELP });
      replace(inviteGroups, invitePicker.element);
    } catch (error) {
      if (signal.aborted) return;
      groupsProblem = error;
      replace(inviteGroups, groupsUnreadable(error, 'Groups cannot be chosen here now: a person invited now has the whole organization.'));
    }
  }

  function closeEditor() {
    delete editor.dataset.userId;
    replace(editor);
  }

  /** The groups `user` is limited to, to change; `saved` gets the user as stored after a change. */
  function openGroups(user: User, saved: (user: User) => void) {
    editor.dataset.userId = user.id;
    let current = user;
    const titleId = `user-groups-title-${user.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const close = h('button', { type: 'button' }, 'Close');
    close.addEventListener('click', closeEditor);
    const now = h('p', { class: 'muted' });
    const showNow = () => replace(now, `Now: ${limitText(current.groupIds, groupsById)}`);
    showNow();
    const picker = groups === undefined ? undefined : groupPicker(groups, current.groupIds ?? [], { help: GROUPS_HELP });
    const groupFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const groupForm = h('form', { class: 'form', 'aria-labelledby': titleId, novalidate: true },
      picker === undefined ? groupsUnreadable(groupsProblem, 'Groups cannot be chosen here now.') : picker.element,
      picker === undefined ? null : h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save groups')),
      groupFeedback);
    onSubmit(groupForm, groupFeedback, async () => {
      if (picker === undefined) return;
      const chosen = picker.value();
      // None chosen: the whole organization, which the service takes as null.
      const wanted = chosen.length === 0 ? null : chosen;
      const same = wanted === null ? current.groupIds === null
        : current.groupIds !== null && [...wanted].sort().join() === [...current.groupIds].sort().join();
      if (same) return 'Nothing to change.';
      current = await api<User>('PATCH', `/v2/users/${encode(current.id)}`, { body: { groupIds: wanted } });
      picker.set(current.groupIds ?? []);
      showNow();
      saved(current);
      return current.groupIds === null ? `${current.name} now has the whole organization.` : `${current.name} is now limited to ${limitText(current.groupIds, groupsById)}.`;
    });
    replace(editor, h('section', { class: 'card', 'aria-labelledby': titleId },
      h('div', { class: 'card-head' }, h('h2', { id: titleId }, `Groups of ${user.name}`), close),
      h('p', { class: 'muted' }, user.email),
      now, groupForm));
    (editor.querySelector<HTMLElement>('input') ?? close).focus();
  }

  async function loadList() {
    table.setAttribute('aria-busy', 'true');
    try {
      const list = await api<UserList>('GET', '/v2/users', { query: { limit: PAGE }, signal });
      replace(listState);
      replace(tbody, ...list.users.map(rowOf));
      if (list.users.length === 0) replace(listState, h('p', { class: 'empty' }, 'No users yet.'));
      more.textContent = list.total > list.users.length ? `The first ${list.users.length} of ${list.total} users.` : '';
    } catch (error) {
      if (signal.aborted) return;
      replace(tbody);
      replace(listState, problemBox(error));
    } finally {
      table.removeAttribute('aria-busy');
    }
  }

  function rowOf(initial: User): HTMLTableRowElement {
    let user = initial;
    const mine = currentSession()?.user.id === user.id;
    const roleSelect = select(ROLES);
    roleSelect.setAttribute('aria-label', `Role of ${user.email}`);
    roleSelect.value = user.role;
    const roleFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const statusCell = h('td');
    const groupsText = h('span', { class: 'limit' });
    const loginCell = h('td');
    const totpCell = h('td');
    const toggle = h('button', { type: 'button' });
    const show = () => {
      replace(statusCell, h('span', { class: `badge user-${user.status}` }, user.status));
      loginCell.textContent = user.lastLoginAt === null ? 'never' : formatTime(user.lastLoginAt);
      totpCell.textContent = user.totpEnabled ? 'on' : 'off';
      toggle.textContent = user.status === 'disabled' ? 'Enable' : 'Disable';
      // Nobody disables or deletes their own account (the service refuses it): not offered.
      toggle.hidden = user.status === 'invited' || mine;
      roleSelect.value = user.role;
      groupsText.textContent = limitText(user.groupIds, groupsById);
    };
    // Not one's own: limited to groups, an admin would lose this page.
    const changeGroups = mine ? null : h('button', { type: 'button', 'aria-label': `Change the groups of ${user.email}` }, 'Change');
    changeGroups?.addEventListener('click', () => openGroups(user, (saved) => {
      user = saved;
      show();
    }));

    roleSelect.addEventListener('change', () => {
      const wanted = roleSelect.value as Role;
      roleSelect.disabled = true;
      replace(roleFeedback);
      void (async () => {
        try {
          user = await api<User>('PATCH', `/v2/users/${encode(user.id)}`, { body: { role: wanted } });
          replace(roleFeedback, h('p', { class: 'ok', role: 'status' }, `Now ${user.role}.`));
        } catch (error) {
          replace(roleFeedback, problemBox(error));
        } finally {
          show();
          if (roleSelect.isConnected) roleSelect.disabled = false;
        }
      })();
    });
    toggle.addEventListener('click', () => void act(toggle, feedback, async () => {
      const status = user.status === 'disabled' ? 'active' : 'disabled';
      user = await api<User>('PATCH', `/v2/users/${encode(user.id)}`, { body: { status } });
      show();
      return status === 'disabled' ? `Disabled ${user.email}: signed out everywhere.` : `Enabled ${user.email}.`;
    }));
    const reinvite = h('button', { type: 'button' }, 'New invitation');
    reinvite.addEventListener('click', () => void act(reinvite, feedback, async () => {
      const invited = await api<InvitedUser>('POST', `/v2/users/${encode(user.id)}/invitation`);
      showInvitation(listSecret, `New invitation for ${invited.email}`, invited);
      return 'A new invitation link is above the list; the previous one no longer works.';
    }));
    const remove = confirmButton('Delete', feedback, async () => {
      await api('DELETE', `/v2/users/${encode(user.id)}`);
      if (editor.dataset.userId === user.id) closeEditor();
      void loadList();
      replace(listFeedback, h('p', { class: 'ok', role: 'status' }, `Deleted ${user.email}.`));
    });
    remove.hidden = mine;
    show();
    return h('tr', { 'data-user-id': user.id },
      h('th', { scope: 'row' }, user.name, mine ? h('span', { class: 'muted' }, ' (you)') : null),
      h('td', { class: 'wrap' }, user.email),
      // The groups under the role, which they narrow: no column of their own, so the table still fits its card.
      h('td', {}, roleSelect, roleFeedback,
        h('p', { class: 'cell-groups' }, h('span', { class: 'muted' }, 'Groups: '), groupsText, changeGroups === null ? null : ' ', changeGroups)),
      statusCell, loginCell, totpCell,
      h('td', { class: 'actions' }, toggle, reinvite, remove, feedback));
  }

  // The list waits for the groups, so that its rows name them.
  void loadGroups().then(loadList);
  return () => controller.abort();
}
