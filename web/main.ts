// The dashboard's entry point: sign-in, the page frame, hash routing (`#/` the fleet,
// `#/vehicles/{id}` one vehicle, the panels of panels.ts) and the one live stream every page listens to.
import { api, type ApiError, explain, storedKey, storeKey, type VehicleList, whenUnauthorized } from './api.ts';
import { h, replace } from './dom.ts';
import { known, remember, renderFleet } from './fleet.ts';
import { renderGeofences } from './geofences.ts';
import { createLive, type LiveState } from './live.ts';
import { renderNav, renderPanel } from './panels.ts';
import { renderVehicle } from './vehicle.ts';

interface ClientConfig {
  tileUrl: string;
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
  renderNav(nav, location.hash, storedKey() !== undefined);
  if (storedKey() === undefined) {
    replace(session);
    return;
  }
  const indicator = h('span', { class: `live live-${live.state()}`, role: 'status', id: 'live-state' }, LIVE_TEXT[live.state()]);
  const signOut = h('button', { type: 'button', id: 'sign-out' }, 'Sign out');
  signOut.addEventListener('click', () => void signOutNow());
  replace(session, indicator, signOut);
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
  const input = h('input', {
    id: 'api-key', name: 'api-key', type: 'password', required: true, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'key-help',
  });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  if (problem !== undefined) {
    replace(feedback, h('div', { class: 'problem', role: 'alert' }, h('strong', {}, problem.title), h('p', {}, problem.detail)));
  }
  const form = h('form', { class: 'card sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Sign in'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('p', { id: 'key-help', class: 'muted' },
      'A Fleet API key (fleet_…) with the fleet:read scope; fleet:write, telemetry:read and streams unlock status changes, charts and live updates, ' +
      'and events:read, rules, webhooks and admin the alerts, the event log, webhooks and API keys. ' +
      'It is kept only in this tab and sent only in the Authorization header.'),
    button,
    feedback);
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
        const { title, detail } = explain(error);
        replace(feedback, h('div', { class: 'problem', role: 'alert' }, h('strong', {}, title), detail === '' ? null : h('p', {}, detail)));
        input.select();
        return;
      }
      storeKey(key);
      known.clear();
      live.start();
      route();
    })();
  });
  replace(main, form);
  input.focus();
}

async function signOutNow(problem?: { title: string; detail: string }) {
  cleanup?.();
  cleanup = undefined;
  // Ends the stream while the key is still at hand.
  await live.stop();
  storeKey(undefined);
  known.clear();
  if (location.hash !== '' && location.hash !== '#/') history.replaceState(null, '', location.pathname);
  showSignIn(problem);
}

function route() {
  if (storedKey() === undefined) {
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
  if (location.hash === '#/geofences') {
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
  if (storedKey() === undefined) return;
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
  if (storedKey() !== undefined) live.start();
  route();
}

void start();
