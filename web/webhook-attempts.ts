// A delivery's attempts, newest first, in a row under the delivery in an endpoint's deliveries
// table (docs/API.md "Webhooks"). The table is read again while a delivery is pending; which
// deliveries have their attempts open is kept here, so a reload opens (and reads) them again.
import { api, encode, type WebhookAttempt } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { problemBox } from './forms.ts';

const PAGE = 20;

/** For one endpoint: the Attempts button of a delivery and the row that shows them. */
export function deliveryAttempts(webhookId: string, columns: number, signal: AbortSignal) {
  const open = new Set<string>();
  return (deliveryId: string, label: string): { button: HTMLButtonElement; row: HTMLTableRowElement } => {
    let cursor: string | null = null;
    const tbody = h('tbody');
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const more = h('button', { type: 'button', hidden: true }, 'Older attempts');
    const row = h('tr', { class: 'attempts-row', hidden: true, 'data-attempts-of': deliveryId },
      h('td', { colspan: columns },
        h('div', { class: 'table-wrap' }, h('table', { class: 'manage-table attempts', 'aria-label': `Attempts of ${label}` },
          h('thead', {}, h('tr', {}, ...['Attempt', 'At', 'Status', 'Response', 'Error'].map((text) => h('th', { scope: 'col' }, text)))),
          tbody)),
        feedback, more));
    const button = h('button', { type: 'button', 'aria-expanded': 'false' }, 'Attempts');

    const attemptRow = (a: WebhookAttempt) => h('tr', { 'data-attempt': a.attempt },
      h('th', { scope: 'row', class: 'num' }, a.attempt),
      h('td', {}, formatTime(a.at)),
      h('td', {}, h('span', { class: `badge delivery-${a.status}` }, a.status)),
      h('td', {}, a.responseStatus ?? '—', h('span', { class: 'muted' }, ` in ${a.durationMs} ms`)),
      h('td', { class: 'error-text' }, a.error ?? ''));

    async function load(append: boolean) {
      try {
        const after = append && cursor !== null ? cursor : undefined;
        const page = await api<{ attempts: WebhookAttempt[]; nextCursor: string | null }>('GET',
          `/v2/webhooks/${encode(webhookId)}/deliveries/${encode(deliveryId)}/attempts`, { query: { limit: PAGE, after }, signal });
        replace(feedback);
        if (append) tbody.append(...page.attempts.map(attemptRow));
        else replace(tbody, ...page.attempts.map(attemptRow));
        cursor = page.nextCursor;
        more.hidden = cursor === null;
        if (tbody.childElementCount === 0) replace(feedback, h('p', { class: 'empty' }, 'No attempt yet.'));
      } catch (error) {
        if (signal.aborted) return;
        replace(feedback, problemBox(error));
      }
    }
    const show = (shown: boolean) => {
      row.hidden = !shown;
      button.setAttribute('aria-expanded', String(shown));
      if (shown) {
        open.add(deliveryId);
        void load(false);
      } else {
        open.delete(deliveryId);
      }
    };
    button.addEventListener('click', () => show(row.hidden !== false));
    more.addEventListener('click', () => void load(true));
    if (open.has(deliveryId)) show(true);
    return { button, row };
  };
}
