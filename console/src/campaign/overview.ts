// The top of a campaign's page: its name (marked TEST for a test campaign), its id to copy, and one
// line of what it is — status, claim window, per-holder limit, where released tickets go, the hold
// cap, the low-stock alert, "by ballot", and a test campaign's clock.
import { copyable, fmt, h, when } from '../ui';
import { POLICY_TEXT, type CampaignDetail } from './model';

/** "opens 1 Dec 2026, 21:00 CET" or "opens as soon as it is opened"; the same for closing. */
function windowText(c: CampaignDetail): (Node | string)[] {
  return [
    c.opensAt ? h('span', {}, 'opens ', when(c.opensAt)) : 'opens as soon as it is opened',
    ' · ',
    c.closesAt ? h('span', {}, 'closes ', when(c.closesAt)) : 'closes only when closed by hand',
  ];
}

export function overviewPanel(id: string) {
  const title = h('h1', {}, '…');
  const idLine = h('p.meta', {}, 'Campaign id ', copyable(id, 'campaign-id', 'Copy id'));
  const meta = h('p.meta');
  const show = (c: CampaignDetail) => {
    title.replaceChildren(c.name, c.test ? h('span.test-mark', { 'data-testid': 'test-mark' }, 'TEST') : '');
    meta.replaceChildren(
      h(`span.status.${c.status.toLowerCase()}`, { 'data-testid': 'status' }, c.status),
      ' · ',
      ...windowText(c),
      ` · ${c.perHolderLimit ? `at most ${fmt(c.perHolderLimit)} per holder` : 'no per-holder limit'}`,
      ' · released tickets ',
      h('span', { 'data-testid': 'release-policy' }, POLICY_TEXT[c.releasePolicy] ?? c.releasePolicy),
      c.maxHoldSeconds === null ? '' : ` · holds at most ${fmt(c.maxHoldSeconds)} s`,
      c.lowStockThreshold === null ? '' : ` · low-stock alert at ${fmt(c.lowStockThreshold)} available`,
      c.mode === 'BALLOT' ? h('span', { 'data-testid': 'mode' }, ' · by ballot') : '',
      c.test ? h('span', { 'data-testid': 'test-clock' }, ' · test clock ', when(c.testClock)) : '',
    );
  };
  /** No campaign has this id: the title says so and the id line goes. */
  const missing = () => {
    title.textContent = 'No such campaign';
    idLine.hidden = true;
  };
  return { title, idLine, meta, show, missing };
}
