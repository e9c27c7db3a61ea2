// The campaigns list: each campaign's name, status and fill bar, refreshed every 2 s. Test mode
// lists test campaigns only (and, to an OPERATOR, the control that purges them: rehearsal.ts), live
// mode live ones only.
import { gql, session } from '../api';
import { purgeControl } from '../rehearsal';
import { onLeave, screen } from '../shell';
import { fmt, h, may, pct, problem, rowsOr, table } from '../ui';
import { fillBar } from './live';
import { STATS, type Stats } from './model';

interface CampaignRow {
  id: string;
  name: string;
  status: string;
  createdAt: string;
  stats: Stats;
}

/** The empty list's sentence: the controls that make a campaign, for a key that may use them. */
function emptyList(test: boolean): string {
  if (!may()) return test ? 'No test campaigns.' : 'No campaigns yet.';
  return test
    ? 'No test campaigns. "New campaign" makes one while Test mode is on; "Test copy…" on a live campaign\'s page copies it.'
    : 'No campaigns yet. "New campaign" above makes the first.';
}

export async function campaigns(): Promise<void> {
  const body = h('tbody');
  const status = h('div');
  const test = session.testMode;
  let listed: CampaignRow[] = [];
  // Purging is an OPERATOR's (purgeTestData), on the list it empties: the test campaigns.
  const purge = test && may() ? purgeControl(() => listed, () => refresh()) : null;
  screen(h('h1', {}, test ? 'Test campaigns' : 'Campaigns'), purge, status, table(['Name', 'Status', 'Fill', 'Allocated', 'Total'], body, { class: 'campaigns' }));
  const refresh = async () => {
    try {
      // Test mode lists test campaigns only, live mode live ones only (the API's campaigns(test:)).
      const data = await gql<{ campaigns: { edges: { node: CampaignRow }[] } }>(`query($test: Boolean) { campaigns(first: 100, test: $test) { edges { node { id name status createdAt stats { ${STATS} } } } } }`, { test });
      status.replaceChildren();
      listed = data.campaigns.edges.map((e) => e.node);
      const rows = data.campaigns.edges.map(({ node }) =>
        h(
          'tr',
          { 'data-testid': `campaign-${node.id}` },
          h('td', {}, h('a', { href: `#/campaigns/${node.id}` }, node.name), test ? h('span.test-mark', { 'data-testid': 'test-mark' }, 'TEST') : ''),
          h('td', {}, h(`span.status.${node.status.toLowerCase()}`, {}, node.status)),
          h('td', {}, fillBar(node.stats)),
          h('td', {}, `${fmt(node.stats.allocated)} (${pct(node.stats.fillRate)})`),
          h('td', {}, fmt(node.stats.total)),
        ),
      );
      body.replaceChildren(...rowsOr(rows, 5, emptyList(test)));
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };
  await refresh();
  const timer = setInterval(refresh, 2000);
  onLeave(() => clearInterval(timer));
}
