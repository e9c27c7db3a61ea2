// Test mode's controls, each an in-page form (no browser prompt or confirm): moving a test
// campaign's clock (advanceTestClock), copying a campaign into a test campaign (createTestCopy), and
// purging old test data (purgeTestData, after a confirmation step that says what goes). The callers
// show them only to keys that may call them (may(): @requires(role: OPERATOR), or @audited, which
// refuses a VIEWER).
import { gql, session } from './api';
import { fmt, formatTime, h, problem, ZONE } from './ui';

/** advanceTestClock moves a clock 1 s to 365 days (31,536,000 s) at a time. */
export const MAX_ADVANCE_SECONDS = 31_536_000;
/** createTestCopy's tickets: 0 to 1,000,000 (generateTickets' cap). */
export const MAX_COPY_TICKETS = 1_000_000;

const UNITS: Record<string, { seconds: number; one: string; many: string }> = {
  seconds: { seconds: 1, one: 'second', many: 'seconds' },
  minutes: { seconds: 60, one: 'minute', many: 'minutes' },
  hours: { seconds: 3_600, one: 'hour', many: 'hours' },
  days: { seconds: 86_400, one: 'day', many: 'days' },
};

/** The seconds a clock form asks for, or what is wrong with it, in words. */
export function advanceSeconds(amount: string, unit: string): { seconds: number } | { error: string } {
  const per = UNITS[unit]?.seconds ?? 1;
  if (amount.trim() === '') return { error: 'Enter how far to move the clock.' };
  const n = Number(amount);
  if (!Number.isInteger(n) || n < 1) return { error: 'Enter a whole number, 1 or more.' };
  if (n * per > MAX_ADVANCE_SECONDS) return { error: `At most 365 days (${fmt(MAX_ADVANCE_SECONDS)} s) at a time.` };
  return { seconds: n * per };
}

/** The tickets a test copy asks for (null: as many as the original has), or what is wrong, in words. */
export function copyTickets(value: string): { tickets: number | null } | { error: string } {
  if (value.trim() === '') return { tickets: null };
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) return { error: 'Enter a whole number of tickets, 0 or more (or leave it empty).' };
  if (n > MAX_COPY_TICKETS) return { error: `At most ${fmt(MAX_COPY_TICKETS)} tickets.` };
  return { tickets: n };
}

/** A form's invalid field, said beside it (role=alert) and marked for screen readers. */
function invalid(field: HTMLInputElement, message: HTMLElement, text: string | null): void {
  message.textContent = text ?? '';
  message.hidden = text === null;
  if (text === null) field.removeAttribute('aria-invalid');
  else {
    field.setAttribute('aria-invalid', 'true');
    field.focus();
  }
}

/** "10 minutes": an amount as the form had it. */
const amountText = (n: number, unit: string) => `${fmt(n)} ${n === 1 ? UNITS[unit]!.one : UNITS[unit]!.many}`;

/** Moves a test campaign's clock forward by an amount in seconds, minutes, hours or days. */
export function advanceClockForm(campaignId: string, done: (message: string) => Promise<void>, cancel: () => void): HTMLElement {
  const amount = h('input', { id: 'clock-amount', type: 'number', min: '1', step: '1', value: '10', required: true, 'aria-describedby': 'clock-error', 'data-testid': 'clock-amount' }) as HTMLInputElement;
  const unit = h('select', { id: 'clock-unit', 'aria-label': 'Unit', 'data-testid': 'clock-unit' },
    ...Object.entries(UNITS).map(([value, u]) => h('option', { value, selected: value === 'minutes' }, u.many)),
  ) as HTMLSelectElement;
  const message = h('p.error', { id: 'clock-error', role: 'alert', hidden: true, 'data-testid': 'clock-error' });
  const status = h('div');
  const submit = h('button', { type: 'submit', 'data-testid': 'clock-submit' }, 'Advance clock') as HTMLButtonElement;
  const form = h('form.stack.panel', {
    novalidate: true,
    'data-testid': 'clock-form',
    'aria-label': 'Advance the test clock',
    onsubmit: async (e: Event) => {
      e.preventDefault();
      const asked = advanceSeconds(amount.value, unit.value);
      if ('error' in asked) return invalid(amount, message, asked.error);
      invalid(amount, message, null);
      submit.disabled = true;
      try {
        await gql('mutation($id: ID!, $s: Int!) { advanceTestClock(campaignId: $id, seconds: $s) { campaign { id testClock } } }', { id: campaignId, s: asked.seconds });
        await done(`The clock moved ${amountText(Number(amount.value), unit.value)} (${fmt(asked.seconds)} s) forward.`);
      } catch (error) {
        status.replaceChildren(problem(error));
      } finally {
        submit.disabled = false;
      }
    },
  },
  h('h2', {}, 'Advance the test clock'),
  h('p.meta', {}, 'Everything in this test campaign runs as if this much time had passed: holds and offers expire, allotments lapse, the window moves. Reset puts the real clock back.'),
  h('label', { for: 'clock-amount' }, 'Move forward by (at most 365 days)'),
  h('div.inline', {}, amount, unit),
  message,
  h('div.actions', {}, submit, h('button.secondary', { type: 'button', 'data-testid': 'clock-cancel', onclick: cancel }, 'Cancel')),
  status,
  );
  queueMicrotask(() => amount.focus());
  return form;
}

/** Makes a test campaign from this one: its settings, quotas and allotments, and synthetic tickets. */
export function testCopyForm(original: { id: string; name: string; total: number }, cancel: () => void): HTMLElement {
  const tickets = h('input', { id: 'copy-tickets', type: 'number', min: '0', max: String(MAX_COPY_TICKETS), step: '1', placeholder: fmt(original.total), 'aria-describedby': 'copy-error', 'data-testid': 'copy-tickets' }) as HTMLInputElement;
  const message = h('p.error', { id: 'copy-error', role: 'alert', hidden: true, 'data-testid': 'copy-error' });
  const status = h('div', { 'data-testid': 'copy-status' });
  const submit = h('button', { type: 'submit', 'data-testid': 'copy-submit' }, 'Create test copy') as HTMLButtonElement;
  return h('form.stack.panel', {
    novalidate: true,
    'data-testid': 'copy-form',
    'aria-label': 'Test copy',
    onsubmit: async (e: Event) => {
      e.preventDefault();
      const asked = copyTickets(tickets.value);
      if ('error' in asked) return invalid(tickets, message, asked.error);
      invalid(tickets, message, null);
      submit.disabled = true;
      try {
        const data = await gql<{ createTestCopy: { campaign: { id: string; name: string; status: string; stats: { total: number } } } }>(
          'mutation($id: ID!, $tickets: Int) { createTestCopy(campaignId: $id, tickets: $tickets) { campaign { id name status stats { total } } } }',
          { id: original.id, tickets: asked.tickets },
        );
        const copy = data.createTestCopy.campaign;
        status.replaceChildren(
          h('p', { role: 'status', 'data-testid': 'copy-made' },
            `"${copy.name}" is made: ${copy.status}, ${fmt(copy.stats.total)} test tickets. `,
            // A test campaign is listed in Test mode: the link turns it on on the way.
            h('a', { href: `#/campaigns/${copy.id}`, 'data-testid': 'open-copy', onclick: () => (session.testMode = true) }, 'Open it in Test mode'),
          ),
        );
      } catch (error) {
        status.replaceChildren(problem(error));
      } finally {
        submit.disabled = false;
      }
    },
  },
  h('h2', {}, 'Test copy'),
  h('p.meta', {}, `A test campaign with this campaign's settings, partners' quotas and live allotments, and synthetic TEST-… tickets, named "${original.name} (test copy)". Partners' test keys rehearse on it; nothing here changes.`),
  h('label', { for: 'copy-tickets' }, `Tickets, 0 to ${fmt(MAX_COPY_TICKETS)} (empty: as many as this campaign has, ${fmt(original.total)})`),
  tickets,
  message,
  h('div.actions', {}, submit, h('button.secondary', { type: 'button', 'data-testid': 'copy-cancel', onclick: cancel }, 'Cancel')),
  status,
  );
}

/** Now as a datetime-local value with seconds, in the browser's zone. */
function nowLocal(): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * "Purge test data…" on the test campaigns list: a time, then a confirmation that names what goes
 * (of the campaigns listed, those created before it), then purgeTestData and what it deleted.
 * `listed` reads the list as it is now; `purged` refreshes it.
 */
export function purgeControl(listed: () => { name: string; createdAt: string }[], purged: () => Promise<void>): HTMLElement {
  const open = h('button.danger', { type: 'button', 'data-testid': 'purge-open', 'aria-expanded': 'false', 'aria-controls': 'purge-panel' }, 'Purge test data…') as HTMLButtonElement;
  const before = h('input', { id: 'purge-before', type: 'datetime-local', step: '1', required: true, 'aria-describedby': 'purge-error', 'data-testid': 'purge-before' }) as HTMLInputElement;
  const message = h('p.error', { id: 'purge-error', role: 'alert', hidden: true, 'data-testid': 'purge-error' });
  const confirmSlot = h('div');
  const result = h('div', { role: 'status', 'data-testid': 'purge-result' });
  const review = h('button.secondary', { type: 'submit', 'data-testid': 'purge-review' }, 'Review…') as HTMLButtonElement;
  const close = () => {
    panel.hidden = true;
    open.setAttribute('aria-expanded', 'false');
    confirmSlot.replaceChildren();
    open.focus();
  };
  const ask = (cutoff: string) => {
    const going = listed().filter((c) => Date.parse(c.createdAt) < Date.parse(cutoff));
    const names = going.slice(0, 5).map((c) => `"${c.name}"`).join(', ') + (going.length > 5 ? ` and ${fmt(going.length - 5)} more` : '');
    const yes = h('button.danger', { type: 'button', 'data-testid': 'purge-confirm' }, going.length ? `Delete ${fmt(going.length)} test ${going.length === 1 ? 'campaign' : 'campaigns'}` : 'Purge') as HTMLButtonElement;
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      try {
        const data = await gql<{ purgeTestData: { campaigns: number; tickets: number; allocations: number; webhookDeliveries: number } }>(
          'mutation($before: DateTime!) { purgeTestData(before: $before) { campaigns tickets allocations webhookDeliveries } }',
          { before: cutoff },
        );
        const p = data.purgeTestData;
        close();
        result.replaceChildren(h('p', {}, `Purged: ${fmt(p.campaigns)} test ${p.campaigns === 1 ? 'campaign' : 'campaigns'}, ${fmt(p.tickets)} tickets, ${fmt(p.allocations)} allocations, ${fmt(p.webhookDeliveries)} test webhook deliveries.`));
        await purged();
      } catch (error) {
        yes.disabled = false;
        confirmSlot.append(problem(error));
      }
    });
    confirmSlot.replaceChildren(
      h('div.confirm', { role: 'alertdialog', 'aria-labelledby': 'purge-question', 'data-testid': 'purge-question' },
        h('p', { id: 'purge-question' },
          h('strong', {}, `Delete every test campaign created before ${formatTime(cutoff)}? `),
          going.length ? `Of those listed here: ${names}. ` : 'None of those listed here was created before then. ',
          'With them go their tickets, allocations, holds, waitlist and ballot entries, allotments and quotas, and test webhook deliveries made before then. No live campaign or figure is touched. It cannot be undone.',
        ),
        h('div.actions', {}, yes, h('button.secondary', { type: 'button', 'data-testid': 'purge-cancel', onclick: () => (confirmSlot.replaceChildren(), review.focus()) }, 'Back')),
      ),
    );
    yes.focus();
  };
  const panel = h('form.stack.panel', {
    id: 'purge-panel',
    hidden: true,
    novalidate: true,
    'data-testid': 'purge-panel',
    'aria-label': 'Purge test data',
    onsubmit: (e: Event) => {
      e.preventDefault();
      const cutoff = before.value ? new Date(before.value) : null;
      if (!cutoff || Number.isNaN(cutoff.getTime())) return invalid(before, message, 'Enter a date and time.');
      invalid(before, message, null);
      ask(cutoff.toISOString());
    },
  },
  h('h2', {}, 'Purge test data'),
  h('label', { for: 'purge-before' }, `Delete test campaigns created before, ${ZONE}`),
  before,
  message,
  h('div.actions', {}, review, h('button.secondary', { type: 'button', 'data-testid': 'purge-close', onclick: close }, 'Cancel')),
  confirmSlot,
  );
  open.addEventListener('click', () => {
    before.value = nowLocal();
    result.replaceChildren();
    confirmSlot.replaceChildren();
    panel.hidden = false;
    open.setAttribute('aria-expanded', 'true');
    before.focus();
  });
  return h('div', { 'data-testid': 'purge' }, h('div.actions', {}, open), panel, result);
}
