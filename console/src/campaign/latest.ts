// A campaign's latest allocations, newest first (15): its sequence number (#, as in the CSV export),
// ticket code, holder, partner and status, with Release for a live one (asked first) to a key that
// may release.
import { gql } from '../api';
import { action, ask, fmt, h, may, problem, rowsOr, stackRow, table } from '../ui';
import type { CampaignDetail, CampaignPage, LatestAllocation } from './model';

/** Latest allocations' columns: Release only for a key that may release. */
const HEADINGS = () => ['#', 'Code', 'Holder', 'Partner', 'Status', ...(may() ? ['Release'] : [])];

export function latestPanel(page: CampaignPage) {
  const body = h('tbody', { 'data-testid': 'latest' });
  const count = h('p.meta');
  const element = h('div', { 'data-testid': 'latest-section' }, h('h2', {}, 'Latest allocations'), count, table(HEADINGS(), body, {}, { stacked: true }));

  const release = async (a: LatestAllocation) => {
    if (!(await ask(`Release ticket ${a.ticket.code} of ${a.holder}? It goes back as the release policy says.`, 'Release', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code message } } }', { id: a.id });
      await page.refresh();
    } catch (error) {
      page.say(problem(error));
    }
  };

  const row = (a: LatestAllocation) =>
    stackRow(HEADINGS(), { 'data-testid': `allocation-${a.id}` },
      h('td', {}, String(a.sequence)),
      h('td.code', {}, a.ticket.code),
      h('td', {}, a.holder),
      h('td', {}, a.partner.name),
      h('td', {}, a.status),
      ...(may() ? [h('td', {}, a.status === 'ACTIVE' || a.status === 'HELD' ? action('Release', { class: 'secondary', 'data-testid': `release-${a.id}`, 'aria-label': `Release ${a.ticket.code}`, onclick: () => release(a) }) : '')] : []),
    );

  const show = (c: CampaignDetail) => {
    // `#` is the allocation's sequence: the campaign's own number, 1 for its first, as in the CSV export.
    body.replaceChildren(...rowsOr(c.allocations.edges.map(({ node }) => row(node)), HEADINGS().length, 'No allocations yet.'));
    count.textContent = c.allocations.totalCount > 0 ? `${fmt(c.allocations.totalCount)} allocations in all, released ones included.` : '';
  };
  return { element, show };
}
