// The dashboard's sections beyond the fleet: alerts, the event log, vehicle groups, drivers, maintenance, reports, the management
// panels and the audit log, each at its own hash route, and the navigation between them. A person
// signed in with a password is offered only the sections their role's scopes open; an API key's
// scopes are not known to the page, so a key is offered every section and a panel it cannot use
// says which scope is missing.
import { h, replace } from './dom.ts';
import { renderAlerts } from './alerts.ts';
import { renderAudit } from './audit.ts';
import { renderDrivers } from './drivers.ts';
import { renderMaintenance } from './maintenance.ts';
import { renderReports } from './reports.ts';
import { renderEvents } from './events.ts';
import { renderGroups } from './groups.ts';
import { renderManageDevices } from './manage-devices.ts';
import { renderManageKeys } from './manage-keys.ts';
import { renderManageUsers } from './manage-users.ts';
import { renderManageVehicles } from './manage-vehicles.ts';
import { renderManageWebhooks } from './manage-webhooks.ts';

interface Panel {
  hash: string;
  label: string;
  title: string;
  /** The scope without which the section is not offered to a person. */
  needs: string;
  render(root: HTMLElement): () => void;
}

// The management of vehicles and devices is for those who may change them (fleet:write); the
// fleet's own pages show them to everyone who may read them. Groups are for everyone who may read
// the fleet: the page offers its changes only to those who may make them.
const PANELS: Panel[] = [
  { hash: '#/alerts', label: 'Alerts', title: 'Alerts', needs: 'events:read', render: renderAlerts },
  { hash: '#/events', label: 'Events', title: 'Event log', needs: 'events:read', render: renderEvents },
  { hash: '#/groups', label: 'Groups', title: 'Groups', needs: 'fleet:read', render: renderGroups },
  { hash: '#/drivers', label: 'Drivers', title: 'Drivers', needs: 'fleet:read', render: renderDrivers },
  { hash: '#/maintenance', label: 'Maintenance', title: 'Maintenance', needs: 'fleet:read', render: renderMaintenance },
  { hash: '#/reports', label: 'Reports', title: 'Reports', needs: 'telemetry:read', render: renderReports },
  { hash: '#/manage/vehicles', label: 'Vehicles', title: 'Vehicles', needs: 'fleet:write', render: renderManageVehicles },
  { hash: '#/manage/devices', label: 'Devices', title: 'Devices', needs: 'fleet:write', render: renderManageDevices },
  { hash: '#/manage/webhooks', label: 'Webhooks', title: 'Webhooks', needs: 'webhooks', render: renderManageWebhooks },
  { hash: '#/manage/keys', label: 'API keys', title: 'API keys', needs: 'admin', render: renderManageKeys },
  { hash: '#/manage/users', label: 'Users', title: 'Users', needs: 'users', render: renderManageUsers },
  { hash: '#/audit', label: 'Audit log', title: 'Audit log', needs: 'audit:read', render: renderAudit },
];

/** What the navigation offers: every section (an API key), or those a person's scopes open; undefined: signed out. */
export type Access = 'all' | { scopes: readonly string[] } | undefined;

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
let pageLinks: Array<{ hash: string; label: string; needs: string }> | undefined;

/** The navigation, the current page marked (a vehicle's page counts as the fleet). Hidden when signed out. */
export function renderNav(nav: HTMLElement, hash: string, access: Access): void {
  pageLinks ??= [...nav.querySelectorAll('a')]
    .map((a) => ({ hash: a.getAttribute('href') ?? '', label: a.textContent?.trim() ?? '', needs: 'fleet:read' }))
    .filter((l) => l.hash.startsWith('#') && l.label !== '' && !PANELS.some((p) => p.hash === l.hash));
  if (pageLinks.length === 0) pageLinks.push({ hash: '#/', label: 'Fleet', needs: 'fleet:read' });
  if (access === undefined) {
    replace(nav);
    nav.hidden = true;
    return;
  }
  nav.hidden = false;
  const links = [...pageLinks, ...PANELS].filter((l) => access === 'all' || access.scopes.includes(l.needs));
  const current = links.some((l) => l.hash === hash) ? hash : hash === '#/account' ? '' : '#/';
  replace(nav, h('ul', {}, ...links.map(({ hash: href, label }) =>
    h('li', {}, h('a', { href, ...(href === current ? { 'aria-current': 'page' } : {}) }, label)))));
}
