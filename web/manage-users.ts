// Users: invite a person (the invitation link shown once, with a copy button), list the
// organization's users, change a role, disable or enable, issue a new invitation (the reset an
// admin gives), delete. Needs the users scope. docs/API.md "Users and sessions".
import { api, currentSession, encode, type InvitedUser, type Role, type User, type UserList } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { act, confirmButton, field, onSubmit, panelHeader, problemBox, secretBox, select } from './forms.ts';
import { ROLES } from './lists.ts';

const ROLE_TEXT: Record<Role, string> = {
  admin: 'admin — everything',
  manager: 'manager — the fleet, rules and alerts',
  operator: 'operator — watch the fleet, handle alerts',
  viewer: 'viewer — read only',
};

const PAGE = 100;

/** The invitation link, shown once: the person sets their password there. */
function invitationBox(title: string, invited: InvitedUser): HTMLElement {
  return secretBox({
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
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const secretSlot = h('div');
  const form = h('form', { class: 'card form', 'aria-labelledby': 'invite-title', novalidate: true },
    h('h2', { id: 'invite-title' }, 'Invite a user'),
    field(email, { label: 'Email', path: '/email' }),
    field(name, { label: 'Name', path: '/name' }),
    field(role, { label: 'Role', path: '/role', help: 'What the person may do; you can change it later.' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Invite')),
    feedback, secretSlot);

  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  /** A new invitation of a listed user, shown once above the list. */
  const listSecret = h('div');
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table', 'aria-label': 'Users' },
    h('thead', {}, h('tr', {},
      ...['Name', 'Email', 'Role', 'Status', 'Last sign-in', 'Two-factor', 'Actions'].map((text) => h('th', { scope: 'col' }, text)))),
    tbody);
  const more = h('p', { class: 'muted' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'users-title' },
    ...panelHeader('Users', 'users-title',
      'People who sign in to this organization with a password. An invited person sets their password with the link of their invitation; '
      + 'a new invitation is how to reset a forgotten password. Managing users needs the users scope.'),
    h('div', { class: 'manage-layout wide-list' },
      h('div', { class: 'manage-forms' }, form),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Users'), listFeedback, listState, listSecret, h('div', { class: 'table-wrap' }, table), more))));

  onSubmit(form, feedback, async () => {
    replace(secretSlot);
    const invited = await api<InvitedUser>('POST', '/v2/users', { body: { email: email.value.trim(), name: name.value.trim(), role: role.value } });
    form.reset();
    role.value = 'viewer';
    replace(secretSlot, invitationBox(`Invitation for ${invited.email}`, invited));
    void loadList();
  });

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
    };

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
      replace(listSecret, invitationBox(`New invitation for ${invited.email}`, invited));
      return 'A new invitation link is above the list; the previous one no longer works.';
    }));
    const remove = confirmButton('Delete', feedback, async () => {
      await api('DELETE', `/v2/users/${encode(user.id)}`);
      void loadList();
      replace(listFeedback, h('p', { class: 'ok', role: 'status' }, `Deleted ${user.email}.`));
    });
    remove.hidden = mine;
    show();
    return h('tr', { 'data-user-id': user.id },
      h('th', { scope: 'row' }, user.name, mine ? h('span', { class: 'muted' }, ' (you)') : null),
      h('td', { class: 'wrap' }, user.email),
      h('td', {}, roleSelect, roleFeedback),
      statusCell, loginCell, totpCell,
      h('td', { class: 'actions' }, toggle, reinvite, remove, feedback));
  }

  void loadList();
  return () => controller.abort();
}
