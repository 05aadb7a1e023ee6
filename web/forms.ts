// What every management form shares: labelled fields, the server's problem shown next to the
// form (title, detail and each field error, also beside the field it names), a secret shown once
// with a copy button, and a delete that asks to be confirmed. A form is never cleared on an
// error: what the user typed stays for them to correct.
import { ApiError, explain, type FieldError } from './api.ts';
import { h, replace } from './dom.ts';

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

let counter = 0;
/** A document-unique id for a control and what describes it. */
export function uid(prefix: string): string {
  counter++;
  return `${prefix}-${counter}`;
}

export interface FieldOptions {
  label: string;
  /** A hint under the control. */
  help?: string;
  /** The JSON Pointer of the body member the control fills, so a field error finds its way back. */
  path?: string;
  className?: string;
}

/** A label, the control, an optional hint and a place for the server's message about it. */
export function field(control: Control, options: FieldOptions): HTMLElement {
  if (control.id === '') control.id = uid('field');
  const error = h('p', { class: 'field-error', id: `${control.id}-error`, hidden: true });
  const describedBy = [`${control.id}-error`];
  let help: HTMLElement | null = null;
  if (options.help !== undefined) {
    help = h('p', { class: 'help', id: `${control.id}-help` }, options.help);
    describedBy.unshift(`${control.id}-help`);
  }
  control.setAttribute('aria-describedby', describedBy.join(' '));
  if (options.path !== undefined) control.dataset.path = options.path;
  return h('div', { class: `field${options.className === undefined ? '' : ` ${options.className}`}` },
    h('label', { for: control.id }, options.label), control, help, error);
}

/** A group of checkboxes, one per value (shown as itself, or as `label` says), under a legend and an optional hint. */
export function checkboxGroup(legend: string, values: readonly string[],
  options: { path?: string; describe?: (value: string) => string; label?: (value: string) => string; className?: string; help?: string } = {}) {
  const boxes = values.map((value) => h('input', { type: 'checkbox', name: legend, value }));
  const errorId = uid('group-error');
  const helpId = options.help === undefined ? undefined : uid('group-help');
  const fieldset = h('fieldset', {
    class: `checks${options.className === undefined ? '' : ` ${options.className}`}`,
    ...(options.path === undefined ? {} : { 'data-path': options.path }), 'aria-describedby': helpId === undefined ? errorId : `${helpId} ${errorId}`,
  },
    h('legend', {}, legend),
    helpId === undefined ? null : h('p', { class: 'help', id: helpId }, options.help),
    ...boxes.map((box, i) => h('label', { class: 'check' }, box, ` ${options.label?.(values[i]!) ?? values[i]}`,
      options.describe === undefined ? null : h('span', { class: 'muted' }, ` — ${options.describe(values[i]!)}`))),
    h('p', { class: 'field-error', id: errorId, hidden: true }));
  return {
    element: fieldset,
    boxes,
    selected: () => boxes.filter((box) => box.checked).map((box) => box.value),
    set(values: readonly string[]) {
      for (const box of boxes) box.checked = values.includes(box.value);
    },
  };
}

/** A problem as the page shows it: title, detail, and the field errors, each with its path. */
export function problemBox(error: unknown): HTMLElement {
  const { title, detail } = explain(error);
  const errors = error instanceof ApiError ? error.errors : [];
  return h('div', { class: 'problem', role: 'alert' },
    h('strong', {}, title),
    detail === '' ? null : h('p', {}, detail),
    errors.length === 0 ? null : h('ul', { class: 'field-errors' },
      ...errors.map((e) => h('li', {}, h('code', {}, e.path === '' ? '(body)' : e.path), ` ${e.message}`))));
}

function pathOf(el: Element): string | undefined {
  return el instanceof HTMLElement ? el.dataset.path : undefined;
}

/**
 * The control or group whose path is the error's path or the longest prefix of it. A form's
 * controls fill the request's body, or, where the form says `data-fields-in="query"` (a report's
 * form), its query: errors about another part of the request are not theirs.
 */
function targetOf(form: HTMLElement, error: FieldError): HTMLElement | undefined {
  if (error.in !== undefined && error.in !== (form.dataset.fieldsIn ?? 'body')) return undefined;
  let best: HTMLElement | undefined;
  let length = -1;
  for (const el of form.querySelectorAll<HTMLElement>('[data-path]')) {
    const path = pathOf(el);
    if (path === undefined) continue;
    if ((error.path === path || error.path.startsWith(`${path}/`)) && path.length > length) {
      best = el;
      length = path.length;
    }
  }
  return best;
}

function errorSlotOf(target: HTMLElement): HTMLElement | null {
  if (target instanceof HTMLFieldSetElement) return target.querySelector<HTMLElement>(':scope > .field-error');
  return document.getElementById(`${target.id}-error`);
}

export function clearProblem(form: HTMLElement, feedback: HTMLElement): void {
  replace(feedback);
  for (const el of form.querySelectorAll<HTMLElement>('[aria-invalid]')) el.removeAttribute('aria-invalid');
  for (const slot of form.querySelectorAll<HTMLElement>('.field-error')) {
    slot.textContent = '';
    slot.hidden = true;
  }
}

/** Shows the problem beside the form, and each field error beside its field too. */
export function showProblem(form: HTMLElement, feedback: HTMLElement, error: unknown): void {
  clearProblem(form, feedback);
  replace(feedback, problemBox(error));
  if (!(error instanceof ApiError)) return;
  let first: HTMLElement | undefined;
  for (const fieldError of error.errors) {
    const target = targetOf(form, fieldError);
    if (target === undefined) continue;
    target.setAttribute('aria-invalid', 'true');
    const slot = errorSlotOf(target);
    if (slot !== null) {
      slot.textContent = slot.textContent === '' ? fieldError.message : `${slot.textContent}; ${fieldError.message}`;
      slot.hidden = false;
    }
    first ??= target;
  }
  (first instanceof HTMLFieldSetElement ? first.querySelector('input') : first)?.focus();
}

/**
 * Runs `action` on submit: its buttons are disabled meanwhile, a problem is shown beside the
 * form, and a success message (what `action` answers) in the same place. The fields are left
 * as they are either way; `action` clears them itself when that is right.
 */
export function onSubmit(form: HTMLFormElement, feedback: HTMLElement, action: () => Promise<string | HTMLElement | void>): void {
  let running = false;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (running) return;
    running = true;
    const buttons = [...form.querySelectorAll<HTMLButtonElement>('button[type="submit"]')];
    for (const button of buttons) button.disabled = true;
    form.setAttribute('aria-busy', 'true');
    clearProblem(form, feedback);
    void (async () => {
      try {
        const done = await action();
        if (typeof done === 'string') replace(feedback, h('p', { class: 'ok', role: 'status' }, done));
        else if (done instanceof HTMLElement) replace(feedback, done);
      } catch (error) {
        showProblem(form, feedback, error);
      } finally {
        running = false;
        for (const button of buttons) button.disabled = false;
        form.removeAttribute('aria-busy');
      }
    })();
  });
}

/** Runs a row's action (revoke, test, retry…): the button waits, a problem goes to `feedback`. */
export async function act(button: HTMLButtonElement, feedback: HTMLElement, action: () => Promise<string | void>): Promise<boolean> {
  button.disabled = true;
  replace(feedback);
  try {
    const done = await action();
    if (typeof done === 'string') replace(feedback, h('p', { class: 'ok', role: 'status' }, done));
    return true;
  } catch (error) {
    replace(feedback, problemBox(error));
    return false;
  } finally {
    if (button.isConnected) button.disabled = false;
  }
}

export interface SecretOptions {
  title: string;
  label: string;
  secret: string;
  note: string;
}

/**
 * A secret the service shows once (an API key, a webhook signing secret): in a read-only field
 * with a copy button, until the user says they have it. Nothing keeps it after that.
 */
function secretBox(options: SecretOptions): HTMLElement {
  const input = h('input', { type: 'text', readonly: true, id: uid('secret'), class: 'secret-value', spellcheck: 'false', autocomplete: 'off' });
  input.value = options.secret;
  const note = h('p', { id: `${input.id}-note` }, options.note);
  // Read with the field, so that landing on it says it is shown once.
  input.setAttribute('aria-describedby', note.id);
  const copy = h('button', { type: 'button' }, 'Copy');
  const done = h('button', { type: 'button', class: 'primary' }, 'Done');
  const said = h('p', { class: 'muted', role: 'status' });
  const box = h('section', { class: 'secret-box', 'aria-label': options.title },
    h('strong', {}, options.title),
    note,
    h('label', { for: input.id }, options.label),
    h('div', { class: 'secret-row' }, input, copy, done),
    said);
  copy.addEventListener('click', () => {
    void (async () => {
      try {
        await navigator.clipboard.writeText(options.secret);
        said.textContent = 'Copied to the clipboard.';
      } catch {
        input.focus();
        input.select();
        said.textContent = 'The browser did not allow copying: the text is selected, copy it with Ctrl+C or ⌘C.';
      }
    })();
  });
  done.addEventListener('click', () => {
    input.value = '';
    box.remove();
  });
  input.addEventListener('focus', () => input.select());
  return box;
}

/**
 * Takes the person to what an action has just shown once (a secret): scrolled into view (at once
 * for someone who prefers reduced motion) and `target` in it focused, so that a keyboard or a
 * screen reader lands there rather than on the button that asked for it, the box maybe out of
 * sight below.
 */
export function reveal(box: HTMLElement, target: HTMLElement = box): void {
  const reduced = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  box.scrollIntoView({ block: 'nearest', behavior: reduced ? 'auto' : 'smooth' });
  target.focus({ preventScroll: true });
}

/**
 * Shows a secret in `slot` and takes the person to its field (revealed). Done gives focus back to
 * where it was, if that is still on the page.
 */
export function showSecret(slot: HTMLElement, options: SecretOptions): HTMLElement {
  const before = document.activeElement;
  const box = secretBox(options);
  replace(slot, box);
  const input = box.querySelector('input');
  reveal(box, input ?? undefined);
  box.querySelector('button.primary')?.addEventListener('click', () => {
    if (before instanceof HTMLElement && before !== document.body && before.isConnected) before.focus();
  });
  return box;
}

/**
 * A destructive button that asks once more in place: "Delete" becomes "Confirm delete" and
 * "Cancel". `action` runs only on the confirmation.
 */
export function confirmButton(label: string, feedback: HTMLElement, action: () => Promise<string | void>): HTMLElement {
  const wrap = h('span', { class: 'confirm' });
  const start = h('button', { type: 'button', class: 'destructive-outline' }, label);
  const yes = h('button', { type: 'button', class: 'destructive' }, `Confirm ${label.toLowerCase()}`);
  const no = h('button', { type: 'button' }, 'Cancel');
  const ask = () => {
    replace(wrap, yes, no);
    yes.focus();
  };
  const reset = () => {
    replace(wrap, start);
    start.focus();
  };
  start.addEventListener('click', ask);
  no.addEventListener('click', reset);
  yes.addEventListener('click', () => {
    no.disabled = true;
    void act(yes, feedback, action).then(() => {
      // Still there (a rotated secret, a refused delete): back to the first button. Focus goes
      // with it unless the action has taken it elsewhere (to the secret it shows).
      no.disabled = false;
      if (!wrap.isConnected) return;
      const focused = document.activeElement;
      const moved = focused !== null && focused !== document.body && !wrap.contains(focused);
      replace(wrap, start);
      if (!moved) start.focus();
    });
  });
  replace(wrap, start);
  return wrap;
}

/** A select of `values`, the first option optionally a placeholder with value ''. */
export function select(values: readonly string[], options: { id?: string; placeholder?: string; labels?: Record<string, string> } = {}): HTMLSelectElement {
  const el = h('select', options.id === undefined ? {} : { id: options.id },
    options.placeholder === undefined ? null : h('option', { value: '' }, options.placeholder),
    ...values.map((value) => h('option', { value }, options.labels?.[value] ?? value)));
  return el;
}

/** A number from an input: undefined when empty, NaN kept so the server names the problem. */
export function numberOf(input: HTMLInputElement): number | undefined {
  const text = input.value.trim();
  return text === '' ? undefined : Number(text);
}

/** A comma- or space-separated list, empty entries dropped. */
export function listOf(text: string): string[] {
  return text.split(/[\s,]+/).map((s) => s.trim()).filter((s) => s !== '');
}

export function loading(text: string): HTMLElement {
  return h('p', { class: 'loading', role: 'status' }, text);
}

/**
 * Reads a list into a table: busy meanwhile, its rows replaced by `rowOf` each item, and `state`
 * saying what there is beside them (`empty` when none; the first n of total when there are more),
 * or the problem of a read that failed (not of one aborted: the page was left).
 */
export async function fillTable<T>(
  table: HTMLTableElement, state: HTMLElement, signal: AbortSignal, read: () => Promise<{ items: T[]; total: number }>,
  rowOf: (item: T) => HTMLElement, text: { empty: string; noun: string },
): Promise<void> {
  const tbody = table.tBodies[0]!;
  table.setAttribute('aria-busy', 'true');
  try {
    const { items, total } = await read();
    replace(state);
    replace(tbody, ...items.map(rowOf));
    if (items.length === 0) replace(state, h('p', { class: 'empty' }, text.empty));
    else if (total > items.length) replace(state, h('p', { class: 'muted' }, `The first ${items.length} of ${total} ${text.noun}.`));
  } catch (error) {
    if (signal.aborted) return;
    replace(tbody);
    replace(state, problemBox(error));
  } finally {
    table.removeAttribute('aria-busy');
  }
}

/** A panel's heading and intro. */
export function panelHeader(title: string, id: string, intro: string): HTMLElement[] {
  return [h('h1', { id }, title), h('p', { class: 'muted intro' }, intro)];
}
