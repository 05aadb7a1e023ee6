// A vehicle's commands (docs/API.md "Commands"): send one of the types its channel carries (an
// engine stop only once confirmed), and its commands newest first, each moving through its
// statuses live (the `command.*` events of the event stream), a queued one cancellable.
import { api, encode, offers, type Command, type CommandList, type CommandTypes } from './api.ts';
import { formatTime, h, replace } from './dom.ts';
import { describeState, listenToEvents } from './event-stream.ts';
import { act, field, onSubmit, problemBox, select, uid } from './forms.ts';

const TYPE_LABELS: Record<string, string> = {
  positionSingle: 'Position now (positionSingle)',
  outputControl: 'Switch an output (outputControl)',
  engineStop: 'Stop the engine (engineStop)',
  engineResume: 'Resume the engine (engineResume)',
  reboot: 'Reboot the device (reboot)',
  custom: 'Custom text (custom)',
};
const FINAL = new Set(['succeeded', 'failed', 'timed_out', 'expired', 'cancelled', 'delivered']);

function paramsText(command: Command): string {
  const p = command.params;
  if (command.type === 'custom') return `"${p.text ?? ''}"`;
  if (command.type === 'outputControl') return `output ${p.output ?? '?'} ${p.on === true ? 'on' : 'off'}`;
  return '';
}

export function renderCommands(root: HTMLElement, vehicleId: string): () => void {
  const controller = new AbortController();
  const signal = controller.signal;
  const base = `/v2/fleet/vehicles/${encode(vehicleId)}`;
  const formBox = h('div', {});
  const tbody = h('tbody', {});
  const table = h('table', { class: 'history commands', 'aria-label': 'Commands, newest first' },
    h('thead', {}, h('tr', {}, ...['Asked', 'Command', 'Status', 'Answer', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody);
  const empty = h('p', { class: 'muted' }, 'No commands yet.');
  const more = h('button', { type: 'button', hidden: true }, 'Older commands');
  const liveNote = h('p', { class: 'muted live-note', role: 'status' });
  const listFeedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
  replace(root, formBox, h('h3', {}, 'History'), liveNote, empty, table, more, listFeedback);

  /** Rows by command id, and the command each shows, so a late event never moves one back. */
  const rows = new Map<string, { row: HTMLElement; command: Command }>();
  let cursor: string | null = null;

  function rowOf(command: Command): HTMLElement {
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    let action: HTMLElement | null = null;
    if (command.status === 'queued' && offers('commands')) {
      const cancel = h('button', { type: 'button', class: 'destructive-outline' }, 'Cancel');
      cancel.addEventListener('click', () => void act(cancel, feedback, async () => {
        show(await api<Command>('DELETE', `/v2/commands/${encode(command.id)}`, { signal }));
      }));
      action = cancel;
    }
    const answer = command.result ?? command.error ?? '';
    return h('tr', { 'data-command': command.id },
      h('td', {}, formatTime(command.createdAt)),
      h('td', {}, command.type, ' ', h('span', { class: 'muted' }, paramsText(command)), h('div', { class: 'muted' }, `via ${command.channel}`)),
      h('td', {}, h('span', { class: `badge command-${command.status}` }, command.status.replace('_', ' '))),
      h('td', { class: 'wrap' }, answer),
      h('td', {}, action, feedback));
  }

  /** Shows a command: a new row on top (or at the end, for an older page), or its row brought up to date. */
  function show(command: Command, older = false) {
    const known = rows.get(command.id);
    // Events may come out of order across a reconnect: a final status is never replaced by an earlier one.
    if (known !== undefined && FINAL.has(known.command.status) && !FINAL.has(command.status)) return;
    const row = rowOf(command);
    if (known !== undefined) known.row.replaceWith(row);
    else if (older) tbody.append(row);
    else tbody.prepend(row);
    rows.set(command.id, { row, command });
    empty.hidden = rows.size > 0;
    table.hidden = rows.size === 0;
    follow();
  }

  async function loadPage() {
    try {
      const page = await api<CommandList>('GET', `${base}/commands`, { query: { limit: 20, ...(cursor === null ? {} : { cursor }) }, signal });
      for (const command of page.commands) if (!rows.has(command.id)) show(command, true);
      cursor = page.nextCursor;
      more.hidden = cursor === null;
      empty.hidden = rows.size > 0;
      table.hidden = rows.size === 0;
    } catch (error) {
      if (!signal.aborted) replace(listFeedback, problemBox(error));
    }
  }
  more.addEventListener('click', () => void loadPage());

  async function showForm() {
    if (!offers('commands')) {
      replace(formBox, h('p', { class: 'muted' }, 'Sending commands needs the commands scope (the operator role or above).'));
      return;
    }
    let types: CommandTypes;
    try {
      types = await api<CommandTypes>('GET', `${base}/command-types`, { signal });
    } catch (error) {
      if (!signal.aborted) replace(formBox, problemBox(error));
      return;
    }
    const type = select(types.types, { id: uid('command-type'), labels: TYPE_LABELS });
    const text = h('input', { type: 'text', id: uid('command-text'), maxlength: 512, autocomplete: 'off', spellcheck: 'false' });
    const output = select(['1', '2', '3', '4'], { id: uid('command-output') });
    const on = select(['on', 'off'], { id: uid('command-on') });
    const confirm = h('input', { type: 'checkbox', id: uid('command-confirm') });
    const textField = field(text, { label: 'Text', path: '/params/text', help: 'Sent as it is, in the device\'s own command language (printable ASCII).' });
    const outputField = h('div', { class: 'inline-fields' }, field(output, { label: 'Output' }), field(on, { label: 'Switch' }));
    const confirmField = h('label', { class: 'check danger-check', for: confirm.id }, confirm,
      ` I confirm: stop the engine of ${vehicleId}. A moving vehicle loses power.`);
    const submit = h('button', { type: 'submit', class: 'primary' }, 'Send command');
    const feedback = h('div', { class: 'feedback', 'aria-live': 'polite' });
    const form = h('form', { class: 'status-form command-form', 'aria-label': 'Send a command' },
      h('p', { class: 'muted' }, `Goes out via ${types.channel}; queued until the device is connected.`),
      field(type, { label: 'Command', path: '/type' }), textField, outputField, confirmField, submit, feedback);
    const fit = () => {
      textField.hidden = type.value !== 'custom';
      outputField.hidden = type.value !== 'outputControl';
      confirmField.hidden = type.value !== 'engineStop';
      text.required = type.value === 'custom';
      confirm.required = type.value === 'engineStop';
      if (type.value !== 'engineStop') confirm.checked = false;
    };
    type.addEventListener('change', fit);
    fit();
    onSubmit(form, feedback, async () => {
      const body: Record<string, unknown> = { type: type.value };
      if (type.value === 'custom') body.params = { text: text.value };
      if (type.value === 'outputControl') body.params = { output: Number(output.value), on: on.value === 'on' };
      const command = await api<Command>('POST', `${base}/commands`, { body, signal });
      show(command);
      confirm.checked = false;
      return `Command ${command.type} queued.`;
    });
    replace(formBox, form);
  }

  // Live only while a command shown can still move (queued or sent): a page of finished commands
  // opens no event stream (and a credential without events:read asks for none it cannot have).
  let stopListening: (() => void) | undefined;
  function follow() {
    if (stopListening !== undefined || ![...rows.values()].some((r) => !FINAL.has(r.command.status))) return;
    stopListening = listenToEvents({
      event(envelope) {
        if (!envelope.type.startsWith('command.') || envelope.vehicleId !== vehicleId) return;
        const command = envelope.data as Command;
        if (typeof command.id === 'string' && typeof command.status === 'string') show(command);
      },
      state(state, why) {
        liveNote.textContent = describeState(state, why);
      },
      // A new stream: what changed before it attached is read again.
      restart() {
        cursor = null;
        void loadPage();
      },
    });
  }

  void showForm();
  void loadPage();
  return () => {
    controller.abort();
    stopListening?.();
  };
}
