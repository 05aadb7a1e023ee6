// The pages of a person who is not signed in: sign-in with email and password (and a two-factor
// code when the account asks for one) or through the organization's OpenID provider (single
// sign-on), sign-in with an API key for developers, and the page an
// invitation's link opens, which sets the password. docs/API.md "Users and sessions".
import { api, ApiError, type Session, type VehicleList } from './api.ts';
import { h, replace } from './dom.ts';
import { field, onSubmit, problemBox, showProblem } from './forms.ts';

/** The way last used in this tab, offered first on the next sign-in page. */
const WAY_STORAGE = 'fleet.signInWith';
type Way = 'password' | 'key';

export interface SignedIn {
  /** A password sign-in or an accepted invitation: the session. */
  session(session: Session): void;
  /** A key that was accepted. */
  key(key: string): void;
}

export function rememberWay(way: Way): void {
  sessionStorage.setItem(WAY_STORAGE, way);
}

function problemFor(problem: { title: string; detail: string } | undefined): HTMLElement | null {
  if (problem === undefined) return null;
  return h('div', { class: 'problem', role: 'alert' }, h('strong', {}, problem.title), problem.detail === '' ? null : h('p', {}, problem.detail));
}

/** The sign-in page: email and password first, an API key as the other way. `problem` says why the person is here (a session that ended). */
export function renderSignIn(root: HTMLElement, signedIn: SignedIn, problem?: { title: string; detail: string }): void {
  const show = (way: Way, problemNow?: { title: string; detail: string }) => {
    rememberWay(way);
    if (way === 'key') keyForm(root, signedIn, problemNow, () => show('password'));
    else passwordForm(root, signedIn, problemNow, () => show('key'));
  };
  show(sessionStorage.getItem(WAY_STORAGE) === 'key' ? 'key' : 'password', problem);
}

function passwordForm(root: HTMLElement, signedIn: SignedIn, problem: { title: string; detail: string } | undefined, other: () => void) {
  const email = h('input', { type: 'email', id: 'sign-in-email', autocomplete: 'username', spellcheck: 'false', required: true, maxlength: 254 });
  const password = h('input', { type: 'password', id: 'sign-in-password', autocomplete: 'current-password', required: true, maxlength: 256 });
  const code = h('input', {
    type: 'text', id: 'sign-in-code', autocomplete: 'one-time-code', inputmode: 'numeric', spellcheck: 'false', maxlength: 32,
  });
  const codeField = field(code, {
    label: 'Two-factor code', path: '/totpCode',
    help: 'The 6-digit code your authenticator app shows now, or one of your recovery codes.',
  });
  codeField.hidden = true;
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' }, problemFor(problem));
  const useKey = h('button', { type: 'button', class: 'link' }, 'Use an API key instead');
  useKey.addEventListener('click', other);
  const form = h('form', { class: 'card sign-in form', 'aria-labelledby': 'sign-in-title', novalidate: true },
    h('h1', { id: 'sign-in-title' }, 'Sign in'),
    field(email, { label: 'Email', path: '/email' }),
    field(password, { label: 'Password', path: '/password' }),
    codeField,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Sign in')),
    feedback,
    h('p', { class: 'muted other-way' }, 'Developers: ', useKey, ' (a key made on the API keys page).'));
  onSubmit(form, feedback, async () => {
    const body: Record<string, string> = { email: email.value.trim(), password: password.value };
    if (!codeField.hidden && code.value.trim() !== '') body.totpCode = code.value.trim();
    let session: Session;
    try {
      session = await api<Session>('POST', '/auth/login', { body });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'totp-required') {
        codeField.hidden = false;
        code.focus();
        return h('p', { class: 'ok', role: 'status' }, 'This account has two-factor sign-in: enter the code from your authenticator app.');
      }
      if (error instanceof ApiError && error.code === 'invalid-credentials') {
        // What was typed stays, but the password (or code) is to be typed again.
        if (!codeField.hidden) code.value = '';
        else password.value = '';
      }
      throw error;
    }
    password.value = '';
    code.value = '';
    rememberWay('password');
    signedIn.session(session);
  });
  replace(root, form, ssoForm());
  email.focus();
}

/** Single sign-on: the organization's OpenID provider signs the person in and sends them back to `/`. */
function ssoForm(): HTMLElement {
  const organization = h('input', { type: 'text', id: 'sso-organization', spellcheck: 'false', required: true, pattern: '^org_[A-Za-z0-9_-]{16}$', maxlength: 20 });
  const form = h('form', { class: 'card sign-in form', 'aria-labelledby': 'sso-title' },
    h('h2', { id: 'sso-title' }, 'Sign in with SSO'),
    field(organization, { label: 'Organization id', path: '/organizationId', help: 'The org_… id your admin gave you.' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Sign in with SSO')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    window.location.assign(`/auth/sso/${encodeURIComponent(organization.value.trim())}?returnTo=/`);
  });
  return form;
}

function keyForm(root: HTMLElement, signedIn: SignedIn, problem: { title: string; detail: string } | undefined, other: () => void) {
  const input = h('input', {
    id: 'api-key', name: 'api-key', type: 'password', required: true, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'key-help',
  });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' }, problemFor(problem));
  const usePassword = h('button', { type: 'button', class: 'link' }, 'Use email and password instead');
  usePassword.addEventListener('click', other);
  const form = h('form', { class: 'card sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Sign in'),
    h('p', { class: 'muted' }, 'With an API key, the way for developers.'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('p', { id: 'key-help', class: 'muted' },
      'A Fleet API key (fleet_…) with the fleet:read scope; fleet:write, telemetry:read and streams unlock status changes, charts and live updates, ' +
      'and events:read, rules, webhooks, admin and users the alerts, the event log, webhooks, API keys and users. ' +
      'It is kept only in this tab and sent only in the Authorization header.'),
    button,
    feedback,
    h('p', { class: 'muted other-way' }, usePassword));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      const key = input.value.trim();
      if (key === '') return;
      button.disabled = true;
      replace(feedback, h('p', { class: 'loading', role: 'status' }, 'Checking the key…'));
      try {
        await api<VehicleList>('GET', '/v2/fleet/vehicles', { query: { limit: 1 }, key });
      } catch (error) {
        button.disabled = false;
        replace(feedback, problemBox(error));
        input.select();
        return;
      }
      rememberWay('key');
      signedIn.key(key);
    })();
  });
  replace(root, form);
  input.focus();
}

/**
 * The page of an invitation's link (`#/invitation?token=…`): the person chooses a password and is
 * signed in. `token` was read from the address, which no longer shows it; undefined when the page
 * was opened without one (or reloaded after it was read).
 */
export function renderInvitation(root: HTMLElement, token: string | undefined, signedIn: SignedIn): void {
  if (token === undefined) {
    replace(root, h('section', { class: 'card sign-in', 'aria-labelledby': 'invitation-title' },
      h('h1', { id: 'invitation-title' }, 'Set your password'),
      h('div', { class: 'problem', role: 'alert' },
        h('strong', {}, 'This page needs the link of your invitation'),
        h('p', {}, 'Open the invitation link you were sent once more (it is read once, then hidden from the address bar), '
          + 'or ask an admin of your organization for a new invitation link.')),
      h('p', {}, h('a', { href: '#/' }, 'Go to sign-in'))));
    return;
  }
  const password = h('input', { type: 'password', autocomplete: 'new-password', required: true, minlength: 12, maxlength: 256 });
  const confirm = h('input', { type: 'password', autocomplete: 'new-password', required: true, minlength: 12, maxlength: 256 });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const form = h('form', { class: 'card sign-in form', 'aria-labelledby': 'invitation-title', novalidate: true },
    h('h1', { id: 'invitation-title' }, 'Set your password'),
    h('p', {}, 'You were invited to Fleet. Choose the password you will sign in with.'),
    field(password, { label: 'New password', path: '/password', help: '12 to 256 characters. A few unrelated words make a good one.' }),
    field(confirm, { label: 'Confirm the password', path: '/confirm' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Set password and sign in')),
    feedback);
  onSubmit(form, feedback, async () => {
    checkNewPassword(password.value, confirm.value, '/password', '/confirm');
    let session: Session;
    try {
      session = await api<Session>('POST', '/auth/invitations/accept', { body: { token, password: password.value } });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'invitation-invalid') {
        showProblem(form, feedback, error);
        feedback.append(h('p', {}, 'Ask an admin of your organization for a new invitation link.'));
        return;
      }
      throw error;
    }
    rememberWay('password');
    signedIn.session(session);
  });
  replace(root, form);
  password.focus();
}

/** A new password as the service takes it (12 to 256 characters), typed the same twice; otherwise a problem for the form. */
export function checkNewPassword(password: string, confirm: string, path: string, confirmPath: string): void {
  const length = [...password].length;
  if (length < 12 || length > 256) {
    throw new ApiError(400, length < 12 ? 'The password is too short' : 'The password is too long', 'A password has 12 to 256 characters.', 'validation-failed', [
      { in: 'body', path, message: length < 12 ? `has ${length} characters; it needs at least 12` : 'must be at most 256 characters long' },
    ]);
  }
  if (password !== confirm) {
    throw new ApiError(400, 'The passwords differ', 'Type the same new password in both fields.', 'validation-failed', [
      { in: 'body', path: confirmPath, message: 'is not the same as the password above' },
    ]);
  }
}
