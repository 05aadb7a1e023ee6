// Webhook endpoints: create one for some event types (its `whsec_` signing secret shown once),
// send it a test event, watch its deliveries and retry one, rotate the secret, enable or disable
// it, open a delivery's attempts, delete it. Needs a key with `webhooks`. docs/API.md "Webhooks".
import { api, encode, type Webhook, type WebhookDelivery } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { EVENT_TYPES } from './lists.ts';
import { act, checkboxGroup, confirmButton, field, onSubmit, panelHeader, problemBox, showSecret, uid } from './forms.ts';
import { deliveryAttempts } from './webhook-attempts.ts';

type Delivery = WebhookDelivery;

const PAGE = 50;
const DELIVERY_PAGE = 20;
/** While a shown delivery is pending, its list is read again this often. */
const POLL_MS = 1000;

/** The event types an endpoint receives: all of them (`*`, also types added later), or those ticked. */
function typePicker() {
  const all = h('input', { type: 'checkbox', id: uid('all-types') });
  const group = checkboxGroup('Event types', EVENT_TYPES, { path: '/eventTypes' });
  group.element.querySelector('legend')?.after(h('label', { class: 'check all-types' }, all, ' All event types, also those added later (*)'));
  const arrange = () => {
    for (const box of group.boxes) box.disabled = all.checked;
  };
  all.addEventListener('change', arrange);
  return {
    element: group.element,
    selected: (): string[] => (all.checked ? ['*'] : group.selected()),
    set(types: readonly string[]) {
      all.checked = types.includes('*');
      group.set(types);
      arrange();
    },
  };
}

export function renderManageWebhooks(root: HTMLElement): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const timers = new Set<number>();

  const url = h('input', { type: 'url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://hooks.example.com/fleet' });
  const description = h('input', { type: 'text', autocomplete: 'off', maxlength: 500 });
  const types = typePicker();
  // A new endpoint hears of everything until narrowed: an empty choice would be refused anyway.
  types.set(['*']);
  const enabled = h('input', { type: 'checkbox', checked: true, id: uid('enabled') });
  const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  const secretSlot = h('div');
  const form = h('form', { class: 'card form', 'aria-labelledby': 'new-webhook-title', novalidate: true },
    h('h2', { id: 'new-webhook-title' }, 'Add a webhook endpoint'),
    field(url, { label: 'URL', path: '/url', help: 'https:// or http://; the service POSTs each event there, signed.' }),
    field(description, { label: 'Description (optional)', path: '/description' }),
    types.element,
    h('label', { class: 'check', for: enabled.id }, enabled, ' Enabled'),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Add endpoint')),
    feedback, secretSlot);

  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  /** What reading the list said: a problem, or that it is empty. */
  const listState = h('div', { class: 'feedback' });
  const list = h('div', { class: 'endpoints' });

  replace(root, h('section', { class: 'manage', 'aria-labelledby': 'webhooks-title' },
    ...panelHeader('Webhooks', 'webhooks-title',
      'Endpoints that receive events as signed HTTP POSTs (Standard Webhooks). The signing secret is shown when an endpoint is created and when it is rotated, never again. Needs the webhooks scope.'),
    h('div', { class: 'manage-layout wide-list' },
      h('div', { class: 'manage-forms' }, form),
      h('div', { class: 'manage-list' }, h('h2', {}, 'Endpoints'), listFeedback, listState, list))));

  onSubmit(form, feedback, async () => {
    replace(secretSlot);
    const body: Record<string, unknown> = { url: url.value.trim(), eventTypes: types.selected(), enabled: enabled.checked };
    if (description.value.trim() !== '') body.description = description.value.trim();
    const created = await api<Webhook & { secret: string }>('POST', '/v2/webhooks', { body });
    form.reset();
    enabled.checked = true;
    types.set(['*']);
    showSecret(secretSlot, {
      title: `Signing secret of ${created.url}`,
      label: 'Signing secret',
      secret: created.secret,
      note: 'Give it to the receiver to verify signatures. It is not shown again (rotate it to get a new one).',
    });
    void loadList();
  });

  async function loadList() {
    list.setAttribute('aria-busy', 'true');
    try {
      const page = await api<{ webhooks: Webhook[]; total: number }>('GET', '/v2/webhooks', { query: { limit: PAGE }, signal });
      replace(listState);
      replace(list, ...page.webhooks.map(endpointOf));
      if (page.webhooks.length === 0) replace(listState, h('p', { class: 'empty' }, 'No endpoints yet.'));
      else if (page.total > page.webhooks.length) replace(listState, h('p', { class: 'muted' }, `The first ${page.webhooks.length} of ${page.total} endpoints.`));
    } catch (error) {
      if (signal.aborted) return;
      replace(list);
      replace(listState, problemBox(error));
    } finally {
      list.removeAttribute('aria-busy');
    }
  }

  function endpointOf(initial: Webhook): HTMLElement {
    let webhook = initial;
    const titleId = uid('endpoint');
    const title = h('h3', { id: titleId, class: 'endpoint-url' });
    const descriptionLine = h('p', { class: 'muted' });
    const typesLine = h('p', { class: 'wrap' });
    const showInfo = () => {
      title.textContent = webhook.url;
      descriptionLine.textContent = webhook.description ?? '';
      descriptionLine.hidden = webhook.description === null;
      replace(typesLine, 'Events: ', ...webhook.eventTypes.map((t) => h('span', { class: 'chip' }, t === '*' ? 'all (*)' : t)));
    };
    showInfo();
    const state = h('p', {});
    const editSlot = h('div');
    const actions = h('div', { class: 'actions' });
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const secretSlot = h('div');
    const deliveriesBox = h('div', { class: 'deliveries', hidden: true });
    const article = h('article', { class: 'card endpoint', 'aria-labelledby': titleId, 'data-webhook-id': webhook.id },
      title, descriptionLine, typesLine, state, actions, feedback, editSlot, secretSlot, deliveriesBox);

    const showState = () => {
      replace(state, h('span', { class: `badge ${webhook.enabled ? 'status-active' : 'status-retired'}` }, webhook.enabled ? 'enabled' : 'disabled'),
        webhook.disabledReason === null ? null : ` ${webhook.disabledReason}`,
        h('span', { class: 'muted' }, ` · created ${formatTime(webhook.createdAt)}`));
      toggle.textContent = webhook.enabled ? 'Disable' : 'Enable';
    };

    const test = h('button', { type: 'button' }, 'Send test');
    test.addEventListener('click', () => void act(test, feedback, async () => {
      await api<Delivery>('POST', `/v2/webhooks/${encode(webhook.id)}/test`);
      openDeliveries();
      return 'Test event sent; its delivery is below.';
    }));
    const showDeliveries = h('button', { type: 'button', 'aria-expanded': 'false' }, 'Deliveries');
    showDeliveries.addEventListener('click', () => {
      if (deliveriesBox.hidden) openDeliveries();
      else closeDeliveries();
    });
    const toggle = h('button', { type: 'button' });
    toggle.addEventListener('click', () => void act(toggle, feedback, async () => {
      webhook = await api<Webhook>('PATCH', `/v2/webhooks/${encode(webhook.id)}`, { body: { enabled: !webhook.enabled } });
      showState();
      return webhook.enabled ? 'Enabled: events are delivered again.' : 'Disabled: no events are delivered until it is enabled.';
    }));
    const rotate = confirmButton('Rotate secret', feedback, async () => {
      const { secret } = await api<{ secret: string }>('POST', `/v2/webhooks/${encode(webhook.id)}/rotate-secret`);
      showSecret(secretSlot, {
        title: `New signing secret of ${webhook.url}`,
        label: 'New signing secret',
        secret,
        note: 'For 24 hours every delivery is signed with the old secret and this one. It is not shown again.',
      });
    });
    const remove = confirmButton('Delete', feedback, async () => {
      await api('DELETE', `/v2/webhooks/${encode(webhook.id)}`);
      article.remove();
      void loadList();
      replace(listFeedback, h('p', { class: 'ok', role: 'status' }, `Deleted the endpoint ${webhook.url}.`));
    });
    const edit = h('button', { type: 'button', 'aria-expanded': 'false' }, 'Edit');
    const closeEdit = () => {
      replace(editSlot);
      edit.setAttribute('aria-expanded', 'false');
    };
    edit.addEventListener('click', () => {
      if (editSlot.childElementCount > 0) {
        closeEdit();
        return;
      }
      edit.setAttribute('aria-expanded', 'true');
      const editUrl = h('input', { type: 'url', autocomplete: 'off', spellcheck: 'false' });
      editUrl.value = webhook.url;
      const editDescription = h('input', { type: 'text', autocomplete: 'off', maxlength: 500 });
      editDescription.value = webhook.description ?? '';
      const editTypes = typePicker();
      editTypes.set(webhook.eventTypes);
      const editFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
      const cancel = h('button', { type: 'button' }, 'Cancel');
      cancel.addEventListener('click', closeEdit);
      const editForm = h('form', { class: 'form edit-endpoint', 'aria-label': `Edit ${webhook.url}`, novalidate: true },
        field(editUrl, { label: 'URL', path: '/url' }),
        field(editDescription, { label: 'Description', path: '/description', help: 'Empty removes it.' }),
        editTypes.element,
        h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save changes'), cancel),
        editFeedback);
      onSubmit(editForm, editFeedback, async () => {
        // Only what changed.
        const patch: Record<string, unknown> = {};
        if (editUrl.value.trim() !== webhook.url) patch.url = editUrl.value.trim();
        const newDescription = editDescription.value.trim() === '' ? null : editDescription.value.trim();
        if (newDescription !== webhook.description) patch.description = newDescription;
        const newTypes = editTypes.selected();
        if (newTypes.join(',') !== webhook.eventTypes.join(',')) patch.eventTypes = newTypes;
        if (Object.keys(patch).length === 0) return 'Nothing to change.';
        webhook = await api<Webhook>('PATCH', `/v2/webhooks/${encode(webhook.id)}`, { body: patch });
        showInfo();
        showState();
        closeEdit();
        replace(feedback, h('p', { class: 'ok', role: 'status' }, 'Saved.'));
      });
      replace(editSlot, editForm);
      editUrl.focus();
    });
    replace(actions, test, showDeliveries, edit, toggle, rotate, remove);
    showState();

    // Deliveries, newest first; read again while one of them is pending.
    let cursor: string | null = null;
    let timer: number | undefined;
    const deliveryFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const tbody = h('tbody');
    const refresh = h('button', { type: 'button' }, 'Refresh');
    const moreButton = h('button', { type: 'button', hidden: true }, 'Older deliveries');
    const COLUMNS = ['Event', 'Attempts', 'Status', 'Response', 'Last attempt', 'Error', 'Actions'];
    const attemptsOf = deliveryAttempts(webhook.id, COLUMNS.length, signal);
    replace(deliveriesBox,
      h('div', { class: 'card-head' }, h('h4', {}, 'Deliveries'), refresh),
      deliveryFeedback,
      h('div', { class: 'table-wrap' }, h('table', { class: 'manage-table', 'aria-label': `Deliveries to ${webhook.url}` },
        h('thead', {}, h('tr', {}, ...COLUMNS.map((text) => h('th', { scope: 'col' }, text)))),
        tbody)),
      moreButton);

    /** The delivery's row, and the row of its attempts under it. */
    const deliveryRows = (d: Delivery): HTMLTableRowElement[] => {
      const attempts = attemptsOf(d.id, `${d.eventType} ${d.eventId}`);
      const retry = h('button', { type: 'button' }, 'Retry');
      retry.addEventListener('click', () => void act(retry, deliveryFeedback, async () => {
        await api<Delivery>('POST', `/v2/webhooks/${encode(webhook.id)}/deliveries/${encode(d.id)}/retry`);
        void loadDeliveries(false);
        return 'Sent again.';
      }));
      return [h('tr', { 'data-delivery-id': d.id, 'data-status': d.status },
        h('th', { scope: 'row' }, d.eventType, h('br'), h('code', { class: 'muted small' }, d.eventId)),
        h('td', { class: 'num' }, d.attempt),
        h('td', {}, h('span', { class: `badge delivery-${d.status}` }, d.status)),
        h('td', {}, d.responseStatus ?? '—', d.durationMs === null ? null : h('span', { class: 'muted' }, ` in ${d.durationMs} ms`)),
        h('td', {}, formatTime(d.at), d.status === 'pending' && d.nextAttemptAt !== null ? h('br') : null,
          d.status === 'pending' && d.nextAttemptAt !== null ? h('span', { class: 'muted' }, `next ${formatTime(d.nextAttemptAt)}`) : null),
        h('td', { class: 'error-text' }, d.error ?? ''),
        h('td', { class: 'actions' }, attempts.button, retry)), attempts.row];
    };

    async function loadDeliveries(append: boolean) {
      window.clearTimeout(timer);
      timers.delete(timer ?? -1);
      try {
        const after = append && cursor !== null ? cursor : undefined;
        const page = await api<{ deliveries: Delivery[]; nextCursor: string | null }>('GET', `/v2/webhooks/${encode(webhook.id)}/deliveries`, {
          query: { limit: DELIVERY_PAGE, after }, signal,
        });
        replace(deliveryFeedback);
        if (append) tbody.append(...page.deliveries.flatMap(deliveryRows));
        else replace(tbody, ...page.deliveries.flatMap(deliveryRows));
        cursor = page.nextCursor;
        moreButton.hidden = cursor === null;
        if (tbody.childElementCount === 0) replace(deliveryFeedback, h('p', { class: 'empty' }, 'No deliveries yet. Send a test event to make one.'));
        if (!deliveriesBox.hidden && tbody.querySelector('tr[data-status="pending"]') !== null) {
          timer = window.setTimeout(() => void loadDeliveries(false), POLL_MS);
          timers.add(timer);
        }
      } catch (error) {
        if (signal.aborted) return;
        replace(deliveryFeedback, problemBox(error));
      }
    }
    function openDeliveries() {
      deliveriesBox.hidden = false;
      showDeliveries.setAttribute('aria-expanded', 'true');
      void loadDeliveries(false);
    }
    function closeDeliveries() {
      deliveriesBox.hidden = true;
      showDeliveries.setAttribute('aria-expanded', 'false');
      window.clearTimeout(timer);
    }
    refresh.addEventListener('click', () => void loadDeliveries(false));
    moreButton.addEventListener('click', () => void loadDeliveries(true));
    return article;
  }

  void loadList();
  return () => {
    controller.abort();
    for (const timer of timers) window.clearTimeout(timer);
  };
}
