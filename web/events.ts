// The event log: the organization's events, newest on top, filtered by type and vehicle. The
// feed (GET /v2/events) is read forward by following `next` to its end, and the live event stream
// adds what happens next; an event is shown once however it arrives (by its id). docs/API.md
// "Events".
import { ApiError, api, encode } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { describeState, type EventEnvelope, listenToEvents } from './event-stream.ts';
import { EVENT_TYPES } from './lists.ts';
import { loading, panelHeader, problemBox, select, uid } from './forms.ts';

const PAGE = 1000;
/** Pages read in one go before asking whether to read on (a long log is not read all at once). */
const PAGES_AT_ONCE = 20;
/** Events kept on the page, newest. */
const KEEP = 500;

interface FeedPage {
  events: EventEnvelope[];
  next: string;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : value === null || value === undefined ? '—' : JSON.stringify(value);
}

/** One line saying what the event means. */
export function summarize(event: EventEnvelope): string {
  switch (event.type) {
    case 'vehicle.registered':
    case 'vehicle.updated': {
      const d = event.data;
      return [text(d.type), d.name === null ? '' : `"${d.name}"`, `(${d.status})`].filter((s) => s !== '').join(' ');
    }
    case 'vehicle.status_changed': {
      const d = event.data;
      return `${text(d.from)} → ${text(d.to)}${d.reason === null ? '' : `: ${d.reason}`} (by ${text(d.by)})`;
    }
    case 'vehicle.deleted':
      return 'deleted';
    case 'geofence.entered':
    case 'geofence.exited':
      return `${event.type === 'geofence.entered' ? 'entered' : 'left'} ${text(event.data.name)}`;
    case 'alert.opened':
    case 'alert.acknowledged':
    case 'alert.resolved': {
      const d = event.data;
      return `${text(d.ruleName)}: ${text(d.status)}${d.note === undefined ? '' : ` (${d.note})`}`;
    }
    case 'trip.started':
      return '';
    case 'trip.ended':
      return `${(event.data.distanceMeters / 1000).toFixed(1)} km`;
    case 'command.queued':
    case 'command.sent':
    case 'command.succeeded':
    case 'command.failed':
    case 'command.timed_out':
    case 'command.expired':
    case 'command.cancelled':
    case 'command.delivered': {
      const d = event.data;
      const outcome = d.result ?? d.error;
      return `${d.type} (${d.channel}): ${d.status.replace('_', ' ')}${outcome === null ? '' : ` — ${outcome}`}`;
    }
    case 'driver.assigned':
      return `driver ${event.data.driverId} (${event.data.source})`;
    case 'driver.unassigned':
      return `driver ${event.data.driverId} left`;
    case 'driver.unknown':
      return `unknown driver identifier ${event.data.identifier}`;
    case 'maintenance.due_soon':
    case 'maintenance.overdue':
      return `${text(event.data.name)}: ${text(event.data.state).replace('_', ' ')}`;
    case 'maintenance.completed':
      return `service done${event.data.name === null ? '' : `: ${event.data.name}`}`;
    case 'report.ready':
      return `report ${event.data.period.from} to ${event.data.period.to} (${event.data.format})`;
    case 'webhook.test':
      return 'test';
    default:
      return '';
  }
}

export function renderEvents(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const typeFilter = select(EVENT_TYPES, { id: uid('event-type'), placeholder: 'All types' });
  const vehicleFilter = h('input', { type: 'search', id: uid('event-vehicle'), autocomplete: 'off', spellcheck: 'false' });
  const filterForm = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter events' },
    h('label', { for: typeFilter.id }, 'Type '), typeFilter,
    h('label', { for: vehicleFilter.id }, 'Vehicle '), vehicleFilter, h('button', { type: 'submit' }, 'Filter'));
  const liveNote = h('p', { class: 'muted live-note', role: 'status' });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  // Offered when the feed has more than one read takes, or when there are no live events to wait for.
  const readOn = h('button', { type: 'button', hidden: true }, 'Read newer events');
  let capped = false;
  let streamOff = false;
  const offerReadOn = () => {
    readOn.hidden = !capped && !streamOff;
  };
  const count = h('p', { class: 'muted', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const table = h('table', { class: 'manage-table events', 'aria-label': 'Events' },
    h('thead', {}, h('tr', {}, ...['Time', 'Type', 'Vehicle', 'What', 'Data'].map((t) => h('th', { scope: 'col' }, t)))),
    tbody);

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'events-title' },
    ...panelHeader('Event log', 'events-title', 'Everything the service noticed about the vehicles, newest on top; new events appear as they happen. Needs events:read.'),
    h('div', { class: 'card-head' }, filterForm, liveNote),
    feedback, readOn, count,
    h('div', { class: 'table-wrap' }, table)));

  /** Ids on the page, so an event read from the feed and from the stream is shown once. */
  const shown = new Set<string>();
  let next: string | undefined;
  let reading = false;
  /** Asked to read while reading: read once more afterwards, from where that read ends. */
  let again = false;
  let token = 0;
  /** Live events that came while the feed was read: added once the read is done, on top of it. */
  const waiting: EventEnvelope[] = [];

  function matches(event: EventEnvelope): boolean {
    const type = typeFilter.value;
    const vehicle = vehicleFilter.value.trim();
    return (type === '' || event.type === type) && (vehicle === '' || event.vehicleId === vehicle) && event.type !== 'webhook.test';
  }

  function rowOf(event: EventEnvelope): HTMLTableRowElement {
    return h('tr', { 'data-event-id': event.id, 'data-type': event.type },
      h('td', { class: 'cell-updated' }, formatTime(event.occurredAt)),
      h('td', {}, h('span', { class: `chip event-${event.type.split('.')[0]}` }, event.type)),
      h('td', {}, event.vehicleId === undefined ? '—' : h('a', { href: `#/vehicles/${encode(event.vehicleId)}` }, event.vehicleId)),
      h('th', { scope: 'row', class: 'wrap' }, summarize(event)),
      h('td', {}, h('details', {}, h('summary', {}, 'JSON'), h('pre', {}, JSON.stringify(event.data, null, 2)))));
  }

  /** Adds events (oldest first) on top of the list, newest first, keeping the newest KEEP. */
  function add(events: EventEnvelope[], live: boolean) {
    const rows: HTMLTableRowElement[] = [];
    for (const event of events) {
      if (shown.has(event.id) || !matches(event)) continue;
      shown.add(event.id);
      const row = rowOf(event);
      if (live) row.classList.add('updated');
      rows.push(row);
    }
    if (rows.length === 0) return;
    tbody.prepend(...rows.reverse());
    while (tbody.childElementCount > KEEP) {
      const last = tbody.lastElementChild as HTMLElement;
      shown.delete(last.dataset.eventId ?? '');
      last.remove();
    }
    showCount();
  }

  function showCount() {
    const n = tbody.childElementCount;
    count.textContent = n === 0 ? '' : n >= KEEP ? `The newest ${KEEP} events.` : `${n} event${n === 1 ? '' : 's'}.`;
    if (n > 0 && feedback.querySelector('.empty') !== null) replace(feedback);
  }

  /** Reads the feed forward from `next` until its end, or PAGES_AT_ONCE pages. */
  function readForward(): void {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    table.setAttribute('aria-busy', 'true');
    const mine = token;
    const type = typeFilter.value;
    const vehicle = vehicleFilter.value.trim();
    void (async () => {
      try {
        for (let pages = 0; pages < PAGES_AT_ONCE; pages++) {
          const page = await api<FeedPage>('GET', '/v2/events', {
            query: { after: next, types: type === '' ? undefined : type, vehicleId: vehicle === '' ? undefined : vehicle, limit: PAGE },
            signal,
          });
          if (mine !== token) return;
          next = page.next;
          add(page.events, false);
          if (page.events.length < PAGE) {
            capped = false;
            offerReadOn();
            replace(feedback, tbody.childElementCount === 0 ? h('p', { class: 'empty' }, 'No events match.') : null);
            return;
          }
        }
        capped = true;
        offerReadOn();
        replace(feedback);
      } catch (error) {
        if (signal.aborted || mine !== token) return;
        // An `after` older than the retention period: start again from the oldest event kept.
        if (error instanceof ApiError && error.status === 410) next = undefined;
        replace(feedback, problemBox(error));
      }
    })().finally(() => {
      if (mine !== token) return;
      reading = false;
      table.removeAttribute('aria-busy');
      if (again) {
        again = false;
        readForward();
      } else if (waiting.length > 0) add(waiting.splice(0), true);
    });
  }

  function restart() {
    token++;
    reading = false;
    again = false;
    waiting.length = 0;
    next = undefined;
    shown.clear();
    replace(tbody);
    replace(feedback, loading('Reading the event log…'));
    count.textContent = '';
    readForward();
  }

  const stopListening = listenToEvents({
    event(envelope) {
      if (reading) waiting.push(envelope);
      else add([envelope], true);
    },
    state(state, why) {
      liveNote.textContent = describeState(state, why);
      streamOff = state === 'off';
      offerReadOn();
    },
    // Whatever was recorded before this stream attached is in the feed after `next`.
    restart() {
      readForward();
    },
  });

  filterForm.addEventListener('submit', (event) => {
    event.preventDefault();
    restart();
  });
  typeFilter.addEventListener('change', restart);
  readOn.addEventListener('click', readForward);
  restart();
  return () => {
    controller.abort();
    stopListening();
  };
}
