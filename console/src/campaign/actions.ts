// A campaign's actions, in a row under its summary: Draw (an open ballot not yet drawn), Open (a
// DRAFT), Edit and Close (until it is closed), then Test mode's controls (testControls.ts). Each
// change is asked about first, in the page (ask), and the page is read again after it. One in-page
// form at a time opens under the row: editing, a test copy, the test clock.
import { gql } from '../api';
import { action, ask, fmt, h, present, problem } from '../ui';
import { editCampaign } from './edit';
import type { CampaignDetail, CampaignPage } from './model';
import { testControls } from './testControls';

export function actionsPanel(page: CampaignPage) {
  const { id } = page;
  const buttons = h('div.actions');
  const slot = h('div');

  const draw = async (entries: number) => {
    if (!(await ask(`Draw the ballot now? Entries close, ${fmt(entries)} entries are ranked and the winners get their holds. It cannot be undone.`, 'Draw', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id });
      await page.refresh();
    } catch (error) {
      page.say(problem(error));
    }
  };

  const transition = async (mutation: 'openCampaign' | 'closeCampaign', question: string, yes: string) => {
    if (!(await ask(question, yes, { danger: mutation === 'closeCampaign' }))) return;
    try {
      await gql(`mutation($id: ID!) { ${mutation}(id: $id) { campaign { id status } } }`, { id });
      await page.refresh();
    } catch (error) {
      page.say(problem(error));
    }
  };

  const forms = {
    open: (form: HTMLElement) => {
      page.say();
      slot.replaceChildren(form);
    },
    close: () => slot.replaceChildren(),
  };

  const show = (c: CampaignDetail) => {
    buttons.replaceChildren(
      ...present(
        c.mode === 'BALLOT' && c.status === 'OPEN' && !c.ballot?.drawnAt ? action('Draw', { 'data-testid': 'draw', onclick: () => draw(c.ballot?.entryCount ?? 0) }) : '',
        c.status === 'DRAFT' ? action('Open', { 'data-testid': 'open', onclick: () => transition('openCampaign', 'Open this campaign for claims?', 'Open') }) : '',
        c.status !== 'CLOSED' ? action('Edit', { class: 'secondary', 'data-testid': 'edit', onclick: () => editCampaign(c, page, slot) }) : '',
        c.status !== 'CLOSED' ? action('Close', { class: 'danger', 'data-testid': 'close', onclick: () => transition('closeCampaign', 'Close this campaign? No claim will be served after this.', 'Close') }) : '',
        ...testControls(c, page, forms),
      ),
    );
  };

  return { buttons, slot, show };
}
