// The console's building blocks, plain DOM: elements, numbers and times (always with their time
// zone), readable errors, empty states, copy buttons, and controls shown only to the roles that may
// use them (a VIEWER reads; the header's banner says so once, rather than a disabled button each).
import { ApiError, session } from './api';

export type Child = Node | string | null | undefined | false;

/** h('div.class', { attrs }, ...children) */
export function h(tag: string, attrs: Record<string, string | ((e: Event) => void) | boolean> = {}, ...children: Child[]): HTMLElement {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name!);
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (typeof v === 'boolean') {
      if (v) el.setAttribute(k, '');
    } else el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** Children for replaceChildren: what h() would leave out (null, '' from a ternary's other side…) left out. */
export const present = (...children: Child[]): (Node | string)[] => children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false && c !== '');

export const fmt = (n: number) => n.toLocaleString('en-US');
export const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The browser's IANA zone, and its short name now as times show it ("CET", "GMT-5", "UTC"). */
const ZONE_NAME = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/**
 * Every moment the console shows has one format, with seconds and the zone: "2 Dec 2026, 21:05:07 CET"
 * (en-GB order whatever the browser's language, so two operators read the same thing).
 */
const DATE_TIME = new Intl.DateTimeFormat('en-GB', {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
  timeZoneName: 'short',
});

/** The zone's short name at a moment (it changes with daylight saving time). */
export const zoneAt = (date: Date) => DATE_TIME.formatToParts(date).find((p) => p.type === 'timeZoneName')?.value ?? ZONE_NAME;

/** The browser's time zone, as operators see it next to every time input: "Europe/Berlin, CET", or "UTC". */
export const ZONE = (() => {
  const short = zoneAt(new Date());
  return short === ZONE_NAME ? short : `${ZONE_NAME}, ${short}`;
})();

/** A moment in the one format ("2 Dec 2026, 21:05:07 CET"), as text. */
export const formatTime = (iso: string) => DATE_TIME.format(new Date(iso));

/** A moment with its zone ("2 Dec 2026, 21:05:07 CET"); '—' for none. A <time> element carries the exact instant. */
export function when(iso: string | null | undefined, empty = '—'): HTMLElement | string {
  if (!iso) return empty;
  return h('time', { datetime: iso, title: new Date(iso).toISOString() }, formatTime(iso));
}

/** A datetime-local input's value as an instant (the browser's zone), or null when empty. */
export const fromLocalInput = (value: string): string | null => (value ? new Date(value).toISOString() : null);

/** An instant as a datetime-local input's value, in the browser's zone. */
export function toLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

const READABLE: Record<string, string> = {
  UNAUTHENTICATED: 'This key was not accepted. Check that it was copied whole, and that it has not been revoked.',
  FORBIDDEN: "This key's role does not allow that.",
  NOT_FOUND: 'Not found: the id is wrong, or it no longer exists.',
  CAMPAIGN_NOT_FOUND: 'That campaign does not exist.',
  RATE_LIMITED: 'Too many requests: try again in a few seconds.',
  UNAVAILABLE: 'The database is busy or unreachable: try again shortly.',
  INTERNAL_SERVER_ERROR: 'Something went wrong on the server. The request id in the server log says what.',
  INVALID_TRANSITION: 'That change is not possible in the current status.',
  LIMIT_REACHED: 'A limit has been reached.',
  NOT_CONFIGURED: 'The server is not configured for this (see its README).',
  NETWORK: 'The server could not be reached. Check the connection and try again.',
};

/** What went wrong, in words: the API's own message where it is written for people (bad input), a sentence otherwise, and the code beside it. */
export function describe(error: unknown): { text: string; code: string } {
  if (error instanceof ApiError) {
    const text = error.code === 'BAD_USER_INPUT' || !READABLE[error.code] ? error.message : READABLE[error.code]!;
    return { text, code: error.code };
  }
  if (error instanceof TypeError) return { text: READABLE.NETWORK!, code: 'NETWORK' };
  return { text: String(error instanceof Error ? error.message : error), code: 'ERROR' };
}

export function problem(error: unknown): HTMLElement {
  const { text, code } = describe(error);
  return h('p.error', { role: 'alert', 'data-code': code }, text, ' ', h('span.code-tag', {}, code));
}

/**
 * A table in a box that scrolls sideways on a narrow screen (a named region a keyboard can reach
 * and scroll), with a "nothing yet" row when empty (rowsOr). A `stacked` table scrolls nowhere: on
 * a narrow screen each row becomes a card of "heading: value" lines (style.css), every column on
 * the screen; its rows are made with stackRow. Its elements keep their table roles explicitly, as
 * a table shown as blocks loses them in some browsers.
 */
export function table(headings: string[], body: HTMLElement, attrs: Record<string, string> = {}, options: { stacked?: boolean } = {}): HTMLElement {
  const label = attrs['aria-label'] ?? `Table: ${headings.filter(Boolean).join(', ')}`;
  if (options.stacked) {
    body.setAttribute('role', 'rowgroup');
    const t = h('table.stacked', { ...attrs, role: 'table', 'aria-label': label },
      h('thead', { role: 'rowgroup' }, h('tr', { role: 'row' }, ...headings.map((x) => h('th', { scope: 'col', role: 'columnheader' }, x)))),
      body);
    return h('div.stacked-box', {}, t);
  }
  return h('div.scroll', { tabindex: '0', role: 'region', 'aria-label': label }, h('table', attrs, h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', { scope: 'col' }, t)))), body));
}

/** A stacked table's row: each cell labelled with its column's heading (shown beside it on a narrow screen). */
export function stackRow(headings: string[], attrs: Record<string, string>, ...cells: HTMLElement[]): HTMLElement {
  cells.forEach((cell, i) => {
    cell.setAttribute('role', 'cell');
    if (headings[i]) cell.dataset.label = headings[i];
  });
  return h('tr', { role: 'row', ...attrs }, ...cells);
}

/** Rows, or one row saying there is nothing yet. */
export function rowsOr(rows: HTMLElement[], columns: number, empty: string): HTMLElement[] {
  return rows.length ? rows : [h('tr', {}, h('td.empty', { colspan: String(columns) }, empty))];
}

/** A button that copies `text`, saying so. */
export function copyButton(text: string, label = 'Copy', testid = 'copy'): HTMLElement {
  const button = h('button.secondary', { type: 'button', 'data-testid': testid, 'aria-label': `${label}: ${text.length > 40 ? 'the value' : text}` }, label) as HTMLButtonElement;
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = 'Copied';
    } catch {
      // No clipboard (an insecure origin): select the value for Ctrl+C instead.
      const field = button.previousElementSibling;
      if (field instanceof HTMLInputElement) field.select();
      button.textContent = 'Select and copy';
    }
    setTimeout(() => (button.textContent = label), 2000);
  });
  return button;
}

/** A value shown read-only, selectable, with its copy button. */
export function copyable(text: string, testid: string, label = 'Copy'): HTMLElement {
  return h('span.copyable', {}, h('input.mono', { value: text, readonly: true, 'aria-label': label === 'Copy' ? 'value' : label, 'data-testid': testid, size: String(Math.min(60, text.length)) }), copyButton(text, label, `${testid}-copy`));
}

/** Whether the signed-in key may change things (everything but a VIEWER). */
export const canWrite = () => session.role !== 'VIEWER';
export const READ_ONLY_REASON = 'Read-only: this key has the VIEWER role, which can see everything but change nothing.';

/**
 * What a control needs, as schema.graphql's @requires says: `write` is @requires(role: OPERATOR)
 * (OPERATOR and OWNER; also the operator side of @audited fields, which refuse a VIEWER), `owner`
 * is @requires(role: OWNER).
 */
export type Need = 'write' | 'owner';
export const may = (needs: Need = 'write') => (needs === 'owner' ? session.role === 'OWNER' : canWrite());

/** A button that changes something, or null for a key whose role may not use it: it is not shown. */
export function action(label: string, attrs: Record<string, string | ((e: Event) => void) | boolean>, needs: Need = 'write'): HTMLButtonElement | null {
  if (!may(needs)) return null;
  return h('button', { type: 'button', ...attrs }, label) as HTMLButtonElement;
}

/** A form that changes something, or null for a key whose role may not use it: it is not shown. */
export function guardForm(form: HTMLElement, needs: Need = 'write'): HTMLElement | null {
  return may(needs) ? form : null;
}

/** What a page shows instead of a form its key cannot use (a page reached by its address). */
export function notForRole(what: string, needs: Need = 'write'): HTMLElement {
  return h('p.readonly-note', { 'data-testid': 'read-only' }, needs === 'owner' ? `Only an OWNER key can ${what}.` : `A VIEWER key cannot ${what}: it reads only.`);
}

/** A value shown once (a key, a webhook secret): copy it now, it is never shown again. */
export function shownOnce(value: string, heading: string, why: string, label: string, testid: string): HTMLElement {
  return h('div.key-once', { role: 'status', 'data-testid': 'key-once' }, h('p', {}, h('strong', {}, `${heading}. `), why), copyable(value, testid, label));
}

/** One page of a connection as a pager shows it. */
export interface PageOf {
  rows: HTMLElement[];
  endCursor: string | null;
  hasNextPage: boolean;
  totalCount: number;
}

/**
 * Previous / Next through a connection (first/after), `size` rows a page, with "21–40 of 95".
 * `fetch` reads one page from a cursor; `show` puts its rows in place. refresh() reads the current
 * page again (live figures); reset() goes back to the first. The buttons only read, so a VIEWER has
 * them too.
 */
export function pager(options: { size: number; testid: string; fetch(after: string | null, first: number): Promise<PageOf>; show(page: PageOf, offset: number): void }) {
  // The cursors each page starts after: [null] is the first page.
  let starts: (string | null)[] = [null];
  let next: string | null = null;
  let generation = 0;
  const previousButton = h('button.secondary', { type: 'button', 'data-read': true, 'data-testid': `${options.testid}-previous` }, '← Previous') as HTMLButtonElement;
  const nextButton = h('button.secondary', { type: 'button', 'data-read': true, 'data-testid': `${options.testid}-next` }, 'Next →') as HTMLButtonElement;
  const range = h('span.meta', { 'data-testid': `${options.testid}-range`, role: 'status' });
  const element = h('div.pager', { 'data-testid': `${options.testid}-pager`, hidden: true }, previousButton, range, nextButton);
  const load = async (): Promise<void> => {
    const mine = ++generation;
    const page = await options.fetch(starts.at(-1) ?? null, options.size);
    if (mine !== generation) return;
    if (page.rows.length === 0 && starts.length > 1) {
      // Entries left meanwhile: this page is empty now, so show the one before.
      starts.pop();
      return load();
    }
    const offset = (starts.length - 1) * options.size;
    next = page.hasNextPage ? page.endCursor : null;
    options.show(page, offset);
    previousButton.disabled = starts.length === 1;
    nextButton.disabled = next === null;
    range.textContent = page.rows.length ? `${fmt(offset + 1)}–${fmt(offset + page.rows.length)} of ${fmt(page.totalCount)}` : '';
    element.hidden = starts.length === 1 && next === null;
  };
  const move = (change: () => void) => {
    change();
    load().catch((error: unknown) => range.replaceChildren(problem(error)));
  };
  previousButton.addEventListener('click', () => move(() => starts.length > 1 && starts.pop()));
  nextButton.addEventListener('click', () => move(() => next !== null && starts.push(next)));
  return {
    element,
    refresh: load,
    reset: () => {
      starts = [null];
      return load();
    },
  };
}

/** A GraphQL connection's page, as the API sends it. */
export interface Connection<T> {
  totalCount: number;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  edges: { cursor: string; node: T }[];
}

let questions = 0;

/** Focus back on `opener`, or on the control that took its place (a live page redraws its buttons). */
function returnFocus(opener: Element | null): void {
  if (!(opener instanceof HTMLElement)) return;
  const testid = opener.dataset.testid;
  const target = opener.isConnected ? opener : testid ? document.querySelector<HTMLElement>(`[data-testid="${CSS.escape(testid)}"]`) : null;
  target?.focus();
}

/**
 * Asks before a change, in the page rather than the browser's confirm(): a modal <dialog> with
 * role alertdialog, named by its question, that keeps focus inside it. The button named for the
 * change answers yes and has the focus; Cancel or Escape answers no. Focus goes back to the
 * control that asked (or the one that replaced it). The dialog sits in #app, so leaving the page
 * takes it away too.
 */
export function ask(question: string, yes: string, options: { danger?: boolean } = {}): Promise<boolean> {
  const opener = document.activeElement;
  const id = `question-${++questions}`;
  const yesButton = h(options.danger ? 'button.danger' : 'button', { type: 'button', 'data-testid': 'confirm-yes' }, yes) as HTMLButtonElement;
  const noButton = h('button.secondary', { type: 'button', 'data-testid': 'confirm-no' }, 'Cancel') as HTMLButtonElement;
  const dialog = h('dialog.ask', { role: 'alertdialog', 'aria-modal': 'true', 'aria-labelledby': id, 'data-testid': 'confirm-dialog' },
    h('p', { id }, question),
    h('div.actions', {}, yesButton, noButton),
  ) as HTMLDialogElement;
  return new Promise((resolve) => {
    yesButton.addEventListener('click', () => dialog.close('yes'));
    noButton.addEventListener('click', () => dialog.close('no'));
    // Escape fires 'cancel' and then closes it with no return value: a no.
    dialog.addEventListener('close', () => {
      dialog.remove();
      returnFocus(opener);
      resolve(dialog.returnValue === 'yes');
    });
    (document.getElementById('app') ?? document.body).append(dialog);
    dialog.showModal();
    yesButton.focus();
  });
}
