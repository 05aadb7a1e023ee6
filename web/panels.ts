// The dashboard's sections beyond the fleet: alerts, the event log and the management panels,
// each at its own hash route, and the navigation between them.
import { h, replace } from './dom.ts';
import { renderAlerts } from './alerts.ts';
import { renderEvents } from './events.ts';
import { renderManageDevices } from './manage-devices.ts';
import { renderManageKeys } from './manage-keys.ts';
import { renderManageVehicles } from './manage-vehicles.ts';
import { renderManageWebhooks } from './manage-webhooks.ts';

interface Panel {
  hash: string;
  label: string;
  title: string;
  render(root: HTMLElement): () => void;
}

const PANELS: Panel[] = [
  { hash: '#/alerts', label: 'Alerts', title: 'Alerts', render: renderAlerts },
  { hash: '#/events', label: 'Events', title: 'Event log', render: renderEvents },
  { hash: '#/manage/vehicles', label: 'Vehicles', title: 'Vehicles', render: renderManageVehicles },
  { hash: '#/manage/devices', label: 'Devices', title: 'Devices', render: renderManageDevices },
  { hash: '#/manage/webhooks', label: 'Webhooks', title: 'Webhooks', render: renderManageWebhooks },
  { hash: '#/manage/keys', label: 'API keys', title: 'API keys', render: renderManageKeys },
];

/** Renders the panel of `hash` into `root`, or answers undefined when the hash is not one of them. */
export function renderPanel(root: HTMLElement, hash: string): { title: string; cleanup: () => void } | undefined {
  const panel = PANELS.find((p) => p.hash === hash);
  if (panel === undefined) return undefined;
  return { title: panel.title, cleanup: panel.render(root) };
}

/**
 * The navigation's links: those index.html lists (the fleet's own pages, which main.ts routes),
 * read once, then the panels above.
 */
let pageLinks: Array<{ hash: string; label: string }> | undefined;

/** The navigation, the current page marked (a vehicle's page counts as the fleet). Hidden when signed out. */
export function renderNav(nav: HTMLElement, hash: string, signedIn: boolean): void {
  pageLinks ??= [...nav.querySelectorAll('a')]
    .map((a) => ({ hash: a.getAttribute('href') ?? '', label: a.textContent?.trim() ?? '' }))
    .filter((l) => l.hash.startsWith('#') && l.label !== '' && !PANELS.some((p) => p.hash === l.hash));
  if (pageLinks.length === 0) pageLinks.push({ hash: '#/', label: 'Fleet' });
  if (!signedIn) {
    replace(nav);
    nav.hidden = true;
    return;
  }
  nav.hidden = false;
  const links = [...pageLinks, ...PANELS];
  const current = links.some((l) => l.hash === hash) ? hash : '#/';
  replace(nav, h('ul', {}, ...links.map(({ hash: href, label }) =>
    h('li', {}, h('a', { href, ...(href === current ? { 'aria-current': 'page' } : {}) }, label)))));
}
