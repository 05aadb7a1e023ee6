// The signed-in person's own account: change the password, and turn two-factor sign-in (TOTP) on
// or off. Turning it on shows the secret for an authenticator app (typed, or opened as its
// otpauth:// link), takes a first code, then shows the ten recovery codes this once.
// docs/API.md "Users and sessions".
import { api, currentSession, type RecoveryCodes, type Session, storeSession, type TotpEnrolment } from './api.ts';
import { h, replace } from './dom.ts';
import { field, loading, onSubmit, problemBox, reveal, uid } from './forms.ts';
import { checkNewPassword } from './sign-in.ts';

/** A base32 secret as a person copies it into an app: groups of four. */
function grouped(secret: string): string {
  return secret.replace(/(.{4})(?=.)/g, '$1 ');
}

export function renderAccount(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const who = h('p', { class: 'muted intro' });
  const totpBox = h('section', { class: 'card form', 'aria-labelledby': 'totp-title' });

  const current = h('input', { type: 'password', autocomplete: 'current-password', maxlength: 256 });
  const next = h('input', { type: 'password', autocomplete: 'new-password', minlength: 12, maxlength: 256 });
  const again = h('input', { type: 'password', autocomplete: 'new-password', minlength: 12, maxlength: 256 });
  const passwordFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const passwordForm = h('form', { class: 'card form', 'aria-labelledby': 'password-title', novalidate: true },
    h('h2', { id: 'password-title' }, 'Change your password'),
    field(current, { label: 'Current password', path: '/currentPassword' }),
    field(next, { label: 'New password', path: '/newPassword', help: '12 to 256 characters.' }),
    field(again, { label: 'Confirm the new password', path: '/confirm' }),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Change password')),
    passwordFeedback);
  onSubmit(passwordForm, passwordFeedback, async () => {
    checkNewPassword(next.value, again.value, '/newPassword', '/confirm');
    await api('POST', '/auth/password', { body: { currentPassword: current.value, newPassword: next.value } });
    passwordForm.reset();
    return 'Password changed. Your other sessions were signed out; this one stays.';
  });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'account-title' },
    h('h1', { id: 'account-title' }, 'Your account'),
    who,
    h('div', { class: 'account-layout' }, passwordForm, totpBox)));

  const showWho = (session: Session) => {
    replace(who, `${session.user.name} · ${session.user.email} · role ${session.user.role}`);
  };

  /** Two-factor sign-in as it is now: on (a form to turn it off) or off (a button to start). */
  function showTotp(session: Session) {
    if (session.user.totpEnabled) {
      const password = h('input', { type: 'password', autocomplete: 'current-password', maxlength: 256 });
      const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
      const off = h('form', { class: 'form', 'aria-label': 'Turn off two-factor sign-in', novalidate: true },
        field(password, { label: 'Your password', path: '/password', help: 'To turn it off. The recovery codes stop working too.' }),
        h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'destructive-outline' }, 'Turn off two-factor sign-in')),
        feedback);
      onSubmit(off, feedback, async () => {
        await api('DELETE', '/auth/totp', { body: { password: password.value } });
        await refresh('Two-factor sign-in is off: a password alone signs you in.');
      });
      replace(totpBox, h('h2', { id: 'totp-title' }, 'Two-factor sign-in'),
        h('p', {}, h('span', { class: 'badge user-active' }, 'on'), ' Sign-in asks for a code from your authenticator app (or a recovery code).'),
        off);
      return;
    }
    const start = h('button', { type: 'button', class: 'primary' }, 'Turn on two-factor sign-in');
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const enrolSlot = h('div');
    start.addEventListener('click', () => {
      start.disabled = true;
      replace(feedback);
      void (async () => {
        try {
          const enrolment = await api<TotpEnrolment>('POST', '/auth/totp');
          start.hidden = true;
          replace(enrolSlot, enrol(enrolment));
        } catch (error) {
          replace(feedback, problemBox(error));
        } finally {
          start.disabled = false;
        }
      })();
    });
    replace(totpBox, h('h2', { id: 'totp-title' }, 'Two-factor sign-in'),
      h('p', {}, h('span', { class: 'badge user-invited' }, 'off'),
        ' With it on, sign-in asks for a code from an authenticator app on your phone as well as your password.'),
      h('div', { class: 'form-actions' }, start), feedback, enrolSlot);
  }

  /** The secret to give the app, and the first code it shows. */
  function enrol(enrolment: TotpEnrolment): HTMLElement {
    const code = h('input', { type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: 6, spellcheck: 'false' });
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const secretId = uid('totp-secret');
    const confirm = h('form', { class: 'form', 'aria-label': 'Confirm two-factor sign-in', novalidate: true },
      field(code, { label: 'Code from the app', path: '/code', help: 'The 6 digits the app shows now.' }),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Turn on')),
      feedback);
    const box = h('section', { class: 'enrolment', 'aria-label': 'Set up your authenticator app' },
      h('ol', { class: 'steps' },
        h('li', {}, 'In your authenticator app, add an account by entering this secret (or open the link below on the phone):',
          h('p', {}, h('code', { class: 'totp-secret', id: secretId, 'aria-label': 'Secret' }, grouped(enrolment.secret))),
          h('p', { class: 'small' }, h('a', { href: enrolment.otpauthUrl, class: 'otpauth' }, enrolment.otpauthUrl))),
        h('li', {}, 'Enter the code the app shows, to check it works.')),
      confirm);
    onSubmit(confirm, feedback, async () => {
      const { recoveryCodes } = await api<RecoveryCodes>('POST', '/auth/totp/confirm', { body: { code: code.value.trim() } });
      await refresh();
      // Above the form that turns it off: what to do now comes first, and focus goes there (the
      // form it was in is gone), so that the codes are read from their start.
      const codes = recoveryBox(recoveryCodes);
      totpBox.insertBefore(codes, totpBox.querySelector('form'));
      reveal(codes);
    });
    return box;
  }

  /** The recovery codes, this once. */
  function recoveryBox(codes: readonly string[]): HTMLElement {
    const done = h('button', { type: 'button', class: 'primary' }, 'I have stored them');
    const box = h('section', { class: 'secret-box', 'aria-label': 'Recovery codes', tabindex: '-1' },
      h('strong', {}, 'Two-factor sign-in is on. Your recovery codes:'),
      h('p', {}, 'Each works once in place of a code, should you lose your phone. Store them somewhere safe now (a password manager, or on paper): '
        + 'they are not shown again.'),
      h('ul', { class: 'recovery-codes' }, ...codes.map((c) => h('li', {}, h('code', {}, c)))),
      h('div', { class: 'form-actions' }, done));
    done.addEventListener('click', () => box.remove());
    return box;
  }

  /** Reads the session again (whether two-factor is on), and shows it. */
  async function refresh(said?: string) {
    const session = await api<Session>('GET', '/auth/session', { signal });
    storeSession(session);
    showWho(session);
    showTotp(session);
    if (said !== undefined) totpBox.append(h('p', { class: 'ok', role: 'status' }, said));
  }

  const known = currentSession();
  if (known !== undefined) showWho(known);
  replace(totpBox, h('h2', { id: 'totp-title' }, 'Two-factor sign-in'), loading('Reading your account…'));
  void refresh().catch((error: unknown) => {
    if (signal.aborted) return;
    replace(totpBox, h('h2', { id: 'totp-title' }, 'Two-factor sign-in'), problemBox(error));
  });
  return () => controller.abort();
}
