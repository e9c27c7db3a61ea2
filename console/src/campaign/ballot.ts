// A BALLOT campaign's ballot: before the opening, when entries open and close; while it takes
// entries, their count and the seed commitment; once drawn, the seed, the entries digest and how to
// recompute the draw. Below, the entries a page at a time — in entry order, then after the draw in
// rank order, each with its winner's hold. Hidden for a first-come campaign.
import { gql } from '../api';
import { fmt, h, pager, problem, rowsOr, table, when, type Connection } from '../ui';
import type { CampaignDetail } from './model';

interface BallotRow {
  rank: number | null;
  holder: string;
  quantity: number;
  status: string;
  createdAt: string;
  partner: { name: string };
  allocations: { status: string; expiresAt: string | null }[];
}

const PAGE_SIZE = 20;
const ENTRY_FIELDS = 'rank holder quantity status createdAt partner { name } allocations { status expiresAt }';
const ENTRIES_PAGE = `query($id: ID!, $first: Int, $after: String) {
  campaign(id: $id) { ballotEntries(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${ENTRY_FIELDS} } } } }
}`;

/** A winner's hold: "held until …", or what became of it. */
const hold = (e: BallotRow) => {
  const a = e.allocations[0];
  if (!a) return '—';
  if (a.status === 'HELD') return h('span', {}, 'held until ', when(a.expiresAt));
  return a.status.toLowerCase();
};

export function ballotPanel(id: string) {
  const summary = h('div', { 'data-testid': 'ballot-summary' });
  const body = h('tbody', { 'data-testid': 'ballot-entries' });
  const heading = h('h2', {}, 'Ballot');
  const status = h('div');
  /** Whether the entries shown are the ranking (null before the first read). */
  let drawnShown: boolean | null = null;
  const entries = pager({
    size: PAGE_SIZE,
    testid: 'ballot-entries',
    fetch: async (after, first) => {
      const data = await gql<{ campaign: { ballotEntries: Connection<BallotRow> } }>(ENTRIES_PAGE, { id, first, after });
      const page = data.campaign.ballotEntries;
      const rows = page.edges.map(({ node: e }) =>
        h('tr', {},
          h('td', {}, e.rank === null ? '—' : String(e.rank)),
          h('td', {}, e.holder),
          h('td', {}, e.partner.name),
          h('td', {}, fmt(e.quantity)),
          h('td', {}, h(`span.entry.${e.status.toLowerCase()}`, {}, e.status)),
          h('td', {}, hold(e)),
        ),
      );
      return { rows, endCursor: page.pageInfo.endCursor, hasNextPage: page.pageInfo.hasNextPage, totalCount: page.totalCount };
    },
    show: (page) => body.replaceChildren(...rowsOr(page.rows, 6, drawnShown ? 'The draw had no entries.' : 'No entries yet.')),
  });
  const element = h('section', { hidden: true, 'data-testid': 'ballot' }, heading, summary, table(['Rank', 'Holder', 'Partner', 'Tickets', 'Status', 'Hold'], body), entries.element, status);

  const show = async (c: CampaignDetail) => {
    element.hidden = c.mode !== 'BALLOT';
    if (c.mode !== 'BALLOT') return;
    const b = c.ballot;
    const closes = c.entriesCloseAt ? h('span', {}, 'entries close ', when(c.entriesCloseAt)) : 'entries close at the draw';
    const confirmWithin = `winners confirm within ${fmt(c.ballotConfirmSeconds ?? 0)} s`;
    if (!b) {
      heading.textContent = 'Ballot';
      summary.replaceChildren(h('p', {}, 'Entries open when the campaign opens · ', closes, ` · ${confirmWithin}.`));
    } else if (!b.drawnAt) {
      heading.textContent = 'Ballot — taking entries';
      summary.replaceChildren(
        h('p', { 'data-testid': 'ballot-count' }, `${fmt(b.entryCount)} entries · `, closes, ` · ${confirmWithin}`),
        h('p', {}, 'Seed commitment (published at the opening): ', h('code', { 'data-testid': 'seed-commitment' }, b.seedCommitment)),
      );
    } else {
      heading.textContent = 'Ballot — drawn';
      summary.replaceChildren(
        h('p', { 'data-testid': 'ballot-count' }, 'Drawn ', when(b.drawnAt), `: ${fmt(b.entryCount)} entries for ${fmt(b.tickets ?? 0)} tickets · ${fmt(b.winners)} winners · ${confirmWithin}`),
        h('dl.hashes', {},
          h('dt', {}, 'Seed'), h('dd', {}, h('code', { 'data-testid': 'seed' }, b.seed ?? '')),
          h('dt', {}, 'Commitment'), h('dd', {}, h('code', {}, b.seedCommitment)),
          h('dt', {}, 'Entries digest'), h('dd', {}, h('code', { 'data-testid': 'entries-digest' }, b.entriesDigest ?? '')),
        ),
        h('p.meta', {}, 'Anyone can recompute the draw: ', h('code', {}, `npx tessera verify-ballot --campaign ${c.id}`)),
      );
    }
    // The draw reorders the entries (entry order, then rank order): the ranking starts at its first page.
    const drawn = Boolean(b?.drawnAt);
    const reading = drawnShown === drawn ? entries.refresh() : entries.reset();
    drawnShown = drawn;
    await reading.then(
      () => status.replaceChildren(),
      (error: unknown) => status.replaceChildren(problem(error)),
    );
  };
  return { element, show };
}
