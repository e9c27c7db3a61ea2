// Test mode's controls on a campaign's page: a live campaign is copied into a test campaign ("Test
// copy…"); a test campaign's clock moves forward ("Advance clock…") or the campaign goes back to
// just after its opening ("Reset", asked first). The forms themselves are in rehearsal.ts.
import { gql } from '../api';
import { advanceClockForm, testCopyForm } from '../rehearsal';
import { action, ask, h, problem } from '../ui';
import type { CampaignDetail, CampaignPage } from './model';

/** Where the controls' forms open (one at a time, under the actions). */
export interface FormSlot {
  open(form: HTMLElement): void;
  close(): void;
}

/** The controls `c` has: for a live campaign "Test copy…", for a test one "Advance clock…" and "Reset". */
export function testControls(c: CampaignDetail, page: CampaignPage, slot: FormSlot): (HTMLButtonElement | null | '')[] {
  const { id } = page;
  const clockMoved = async (message: string) => {
    slot.close();
    page.say(h('p', { role: 'status', 'data-testid': 'clock-moved' }, message));
    await page.refresh();
  };
  const reset = async () => {
    if (!(await ask('Reset this test campaign to just after its opening? Every allocation, hold, waitlist and ballot entry of it is deleted.', 'Reset', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { resetTestCampaign(id: $id) { campaign { id } } }', { id });
      page.say(h('p', { role: 'status' }, 'The test campaign is back to its opening.'));
      await page.refresh();
    } catch (error) {
      page.say(problem(error));
    }
  };
  if (!c.test) return [action('Test copy…', { class: 'secondary', 'data-testid': 'test-copy', onclick: () => slot.open(testCopyForm({ id, name: c.name, total: c.stats.total }, slot.close)) })];
  return [
    action('Advance clock…', { class: 'secondary', 'data-testid': 'advance-clock', onclick: () => slot.open(advanceClockForm(id, clockMoved, slot.close)) }),
    action('Reset', { class: 'secondary', 'data-testid': 'reset-test', onclick: () => void reset() }),
  ];
}
