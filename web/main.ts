// The dashboard's entry point: sign-in, the page frame, hash routing (`#/` the fleet,
// `#/vehicles/{id}` one vehicle, `#/account` the person's own, `#/invitation` an invitation's
// link, the panels of panels.ts) and the one live stream every page listens to.
import { renderAccount } from './account.ts';
import { api, type ApiError, currentSession, explain, type Session, storedKey, storeKey, storeSession, whenUnauthorized } from './api.ts';
import { h, replace } from './dom.ts';
import { known, remember, renderFleet } from './fleet.ts';
import { renderGeofences } from './geofences.ts';
import { createLive, type LiveState } from './live.ts';
import { renderNav, renderPanel } from './panels.ts';
import { renderInvitation, renderSignIn, type SignedIn } from './sign-in.ts';
import { renderVehicle } from './vehicle.ts';

interface ClientConfig {
  tileUrl: string;
  /** Whether the page's request carried a session cookie (the page cannot read it itself). */
  sessionCookie?: boolean;
}

const main = document.getElementById('main') as HTMLElement;
const session = document.getElementById('session') as HTMLElement;
const nav = document.querySelector('header nav') as HTMLElement;
const live = createLive();
live.onMessage(remember);

let config: ClientConfig = { tileUrl: '' };
let cleanup: (() => void) | undefined;

const LIVE_TEXT: Record<LiveState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  off: 'Not live',
};

function renderSession() {
  const person = currentSession();
  const key = storedKey() !== undefined;
  renderNav(nav, location.hash, key ? 'all' : person === undefined ? undefined : { scopes: person.scopes });
  if (!key && person === undefined) {
    replace(session);
    return;
  }
  const indicator = h('span', { class: `live live-${live.state()}`, role: 'status', id: 'live-state' }, LIVE_TEXT[live.state()]);
  const signOut = h('button', { type: 'button', id: 'sign-out' }, 'Sign out');
  signOut.addEventListener('click', () => void signOutNow());
  const account = person === undefined || key ? null : h('span', { class: 'who' },
    h('span', { class: 'who-name' }, person.user.name),
    h('a', { href: '#/account', ...(location.hash === '#/account' ? { 'aria-current': 'page' } : {}) }, 'Account'));
  replace(session, indicator, account, signOut);
}

let liveProblem: string | undefined;
const liveBanner = (state: LiveState) => liveProblem === undefined ? ''
  : state === 'off' ? `Live updates are off: ${liveProblem}` : `Live updates are interrupted: ${liveProblem}. Trying again…`;
live.onState((state, detail) => {
  // Off for good, or failing and trying again: either way the page says why.
  liveProblem = state === 'off' || state === 'reconnecting' ? detail : undefined;
  const indicator = document.getElementById('live-state');
  if (indicator !== null) {
    indicator.className = `live live-${state}`;
    indicator.textContent = LIVE_TEXT[state];
    indicator.title = liveProblem ?? '';
  }
  const banner = document.getElementById('live-problem');
  if (banner !== null) {
    banner.hidden = liveProblem === undefined;
    banner.textContent = liveBanner(state);
  }
});

function showSignIn(problem?: { title: string; detail: string }) {
  cleanup?.();
  cleanup = undefined;
  renderSession();
  document.title = 'Sign in · Fleet';
  renderSignIn(main, signedIn, problem);
}

/** The ways in: each lands on the page asked for (the fleet unless a page was). */
const signedIn: SignedIn = {
  session(next) {
    storeKey(undefined);
    storeSession(next);
    enter();
  },
  key(key) {
    storeSession(undefined);
    storeKey(key);
    enter();
  },
};

function enter() {
  invitationToken = undefined;
  known.clear();
  live.start();
  if (location.hash.startsWith('#/invitation')) history.replaceState(null, '', `${location.pathname}#/`);
  route();
}

/** Set while signing out, so the 401s of requests cut short by it do not start another. */
let signingOut = false;

/** Signs out: `problem` says why when the credential stopped working, and then there is no session left to end. */
async function signOutNow(problem?: { title: string; detail: string }) {
  signingOut = true;
  try {
    cleanup?.();
    cleanup = undefined;
    // Ends the stream while the credential is still at hand.
    await live.stop();
    if (currentSession() !== undefined && problem === undefined) {
      await api('POST', '/auth/logout').catch(() => undefined);
    }
    storeKey(undefined);
    storeSession(undefined);
    known.clear();
  } finally {
    signingOut = false;
  }
  if (location.hash !== '' && location.hash !== '#/') history.replaceState(null, '', location.pathname);
  showSignIn(problem);
}

/** An invitation's token, read from the address once and then kept only here (the address no longer shows it). */
let invitationToken: string | undefined;

function readInvitation() {
  if (!location.hash.startsWith('#/invitation')) return;
  const query = location.hash.slice('#/invitation'.length).replace(/^\?/, '');
  const token = new URLSearchParams(query).get('token');
  if (token !== null && token !== '') {
    invitationToken = token;
    history.replaceState(null, '', `${location.pathname}#/invitation`);
  }
}

function isSignedIn(): boolean {
  return storedKey() !== undefined || currentSession() !== undefined;
}

function route() {
  if (location.hash.startsWith('#/invitation')) {
    readInvitation();
    cleanup?.();
    cleanup = undefined;
    renderSession();
    document.title = 'Set your password · Fleet';
    renderInvitation(main, invitationToken, signedIn);
    return;
  }
  if (!isSignedIn()) {
    showSignIn();
    return;
  }
  cleanup?.();
  renderSession();
  const banner = h('p', { id: 'live-problem', class: 'warning', role: 'status', hidden: liveProblem === undefined },
    liveBanner(live.state()));
  const view = h('div', { class: 'view' });
  replace(main, banner, view);
  const panel = renderPanel(view, location.hash);
  if (panel !== undefined) {
    document.title = `${panel.title} · Fleet`;
    cleanup = panel.cleanup;
    view.querySelector('h1')?.setAttribute('tabindex', '-1');
    return;
  }

  const match = /^#\/vehicles\/([^/]+)$/.exec(location.hash);
  if (location.hash === '#/account') {
    document.title = 'Your account · Fleet';
    if (currentSession() !== undefined) cleanup = renderAccount(view);
    else {
      replace(view, h('h1', {}, 'Your account'),
        h('p', {}, 'Signed in with an API key: there is no account here. People who sign in with a password change it and two-factor sign-in on this page.'));
      cleanup = undefined;
    }
  } else if (location.hash === '#/geofences') {
    document.title = 'Geofences · Fleet';
    cleanup = renderGeofences(view, { tileUrl: config.tileUrl });
  } else if (match !== null) {
    let id: string;
    try {
      id = decodeURIComponent(match[1]!);
    } catch {
      id = match[1]!;
    }
    document.title = `${id} · Fleet`;
    cleanup = renderVehicle(view, id, { live, tileUrl: config.tileUrl });
  } else {
    document.title = 'Fleet dashboard';
    cleanup = renderFleet(view, { live, tileUrl: config.tileUrl });
  }
  view.querySelector('h1')?.setAttribute('tabindex', '-1');
}

whenUnauthorized((error: ApiError) => {
  if (!isSignedIn() || signingOut) return;
  void signOutNow(explain(error));
});

window.addEventListener('hashchange', route);

async function start() {
  try {
    const res = await fetch('/dashboard/config.json', { cache: 'no-store' });
    if (res.ok) config = (await res.json()) as ClientConfig;
  } catch {
    // No tiles then; the map still draws its coordinate grid.
  }
  readInvitation();
  // Without a key, the session cookie (if any) says who this is; without a cookie there is no
  // session to ask about.
  if (storedKey() === undefined && config.sessionCookie !== false) {
    try {
      storeSession(await api<Session>('GET', '/auth/session'));
    } catch {
      storeSession(undefined);
    }
  }
  if (isSignedIn()) live.start();
  route();
}

void start();
