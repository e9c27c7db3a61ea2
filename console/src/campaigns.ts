// Campaign screens: the list with fill bars (and, in Test mode, purging test data), the
// new-campaign form, and a campaign's page — its id, live figures, claims and refusals per minute
// (timeline.ts), partners, allocations (search, release, export), allotments, waitlist or ballot
// (after the draw: the ranking leads, without the chart or loading), editing, loading tickets, and
// test mode's controls (rehearsal.ts). Controls are shown only to roles that may use them. Every
// time is shown with its zone.
import { EXPORT_QUERY, HEADER, csvRow, type ExportedAllocation } from '../../src/cli/csv';
import { gql, session, subscription } from './api';
import { advanceClockForm, purgeControl, testCopyForm } from './rehearsal';
import { onLeave, screen } from './shell';
import { timelineChart, type TimelinePoint } from './timeline';
import {
  action,
  copyable,
  fmt,
  fromLocalInput,
  h,
  may,
  notForRole,
  pager,
  pct,
  present,
  problem,
  rowsOr,
  stackRow,
  table,
  toLocalInput,
  when,
  ZONE,
} from './ui';

export interface Stats {
  total: number;
  allocated: number;
  held: number;
  available: number;
  allotted: number;
  void: number;
  fillRate: number;
  /** Sold out now: nothing available, allotted or held that could come back (the API's one definition). */
  soldOut: boolean;
  /** When it first sold out (kept after a release or a load ends the sell-out). */
  soldOutAt: string | null;
}

const STATS = 'total allocated held allotted available void fillRate soldOut soldOutAt';

export function fillBar(stats: Stats): HTMLElement {
  const total = Math.max(stats.total, 1);
  return h(
    'div.fill',
    {
      'data-testid': 'fill-bar',
      'data-allocated': String(stats.allocated),
      'data-total': String(stats.total),
      role: 'img',
      'aria-label': `${fmt(stats.allocated)} allocated, ${fmt(stats.held)} held of ${fmt(stats.total)}`,
      title: `${fmt(stats.allocated)} allocated, ${fmt(stats.held)} held of ${fmt(stats.total)}`,
    },
    h('div.fill-allocated', { style: `width:${(stats.allocated / total) * 100}%` }),
    h('div.fill-held', { style: `width:${(stats.held / total) * 100}%` }),
  );
}

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

/** The fields a campaign's window and limit share between creating and editing. */
function windowFields(initial: { perHolderLimit?: number | null; opensAt?: string | null; closesAt?: string | null } = {}) {
  const limit = h('input', { id: 'f-limit', name: 'limit', type: 'number', min: '1', placeholder: 'no limit', value: initial.perHolderLimit ? String(initial.perHolderLimit) : '' }) as HTMLInputElement;
  const opensAt = h('input', { id: 'f-opens', name: 'opensAt', type: 'datetime-local', value: toLocalInput(initial.opensAt ?? null) }) as HTMLInputElement;
  const closesAt = h('input', { id: 'f-closes', name: 'closesAt', type: 'datetime-local', value: toLocalInput(initial.closesAt ?? null) }) as HTMLInputElement;
  return {
    limit,
    opensAt,
    closesAt,
    labels: [
      h('label', { for: 'f-limit' }, 'Tickets per holder (empty: no limit)'),
      limit,
      h('label', { for: 'f-opens' }, `Claims open at, ${ZONE} (empty: as soon as it is opened)`),
      opensAt,
      h('label', { for: 'f-closes' }, `Claims close at, ${ZONE} (empty: only when closed by hand)`),
      closesAt,
    ],
  };
}

const POLICY_OPTION: Record<string, string> = {
  POOL: 'Go back to the pool (default)',
  VOID: 'Are retired for good (VOID)',
  WAITLIST_FIRST: 'Go to the waitlist first',
};

/** A whole number of seconds (or a count), empty for the server's default. */
const numberInput = (id: string, testid: string, placeholder: string, max: string) =>
  h('input', { id, name: id, type: 'number', min: '1', max, step: '1', placeholder, 'data-testid': testid }) as HTMLInputElement;

export function newCampaign(): void {
  if (!may()) return screen(h('h1', {}, 'New campaign'), notForRole('create campaigns'));
  const name = h('input', { id: 'f-name', name: 'name', required: true, maxlength: '200', 'data-testid': 'campaign-name' }) as HTMLInputElement;
  const fields = windowFields();
  const mode = h('select', { id: 'f-mode', name: 'mode', 'data-testid': 'campaign-mode' },
    h('option', { value: 'FIRST_COME' }, 'First come, first served'),
    h('option', { value: 'BALLOT' }, 'Ballot: entries, then a draw'),
  ) as HTMLSelectElement;
  const entriesCloseAt = h('input', { id: 'f-entries', name: 'entriesCloseAt', type: 'datetime-local', 'data-testid': 'ballot-entries-close' }) as HTMLInputElement;
  const confirmSeconds = numberInput('f-confirm', 'ballot-confirm-seconds', '900 (default)', '2592000');
  const ballotFields = h('fieldset.stack', { hidden: true, 'data-testid': 'ballot-fields' },
    h('legend', {}, 'Ballot'),
    h('label', { for: 'f-entries' }, `Entries close at, ${ZONE} (empty: at the draw)`), entriesCloseAt,
    h('label', { for: 'f-confirm' }, 'Winners confirm within, seconds (empty: 900, or the longest hold if shorter)'), confirmSeconds,
  );
  const policy = h('select', { id: 'f-policy', name: 'releasePolicy', 'data-testid': 'campaign-release-policy' },
    ...Object.entries(POLICY_OPTION).map(([value, text]) => h('option', { value }, text)),
  ) as HTMLSelectElement;
  const offerSeconds = numberInput('f-offer', 'campaign-offer-seconds', '900 (default)', '2592000');
  const waitlistFields = h('div.stack', { hidden: true, 'data-testid': 'waitlist-fields' },
    h('label', { for: 'f-offer' }, 'A waitlist offer is held for, seconds (empty: 900, or the longest hold if shorter)'), offerSeconds,
  );
  const maxHold = numberInput('f-max-hold', 'campaign-max-hold', 'no limit', '2592000');
  const lowStock = numberInput('f-low-stock', 'campaign-low-stock', 'never', '10000000');
  const sync = () => {
    const ballot = mode.value === 'BALLOT';
    // A ballot passes returned tickets on to its ranking: it has no waitlist.
    const waitlistOption = policy.querySelector<HTMLOptionElement>('option[value="WAITLIST_FIRST"]')!;
    waitlistOption.disabled = ballot;
    waitlistOption.hidden = ballot;
    if (ballot && policy.value === 'WAITLIST_FIRST') policy.value = 'POOL';
    ballotFields.hidden = !ballot;
    waitlistFields.hidden = policy.value !== 'WAITLIST_FIRST';
  };
  mode.addEventListener('change', sync);
  policy.addEventListener('change', sync);
  const status = h('div');
  const form = h(
    'form.stack',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const input: Record<string, unknown> = { name: name.value, mode: mode.value, releasePolicy: policy.value };
          if (session.testMode) input.test = true;
          if (fields.limit.value) input.perHolderLimit = Number(fields.limit.value);
          if (fields.opensAt.value) input.opensAt = fromLocalInput(fields.opensAt.value);
          if (fields.closesAt.value) input.closesAt = fromLocalInput(fields.closesAt.value);
          if (maxHold.value) input.maxHoldSeconds = Number(maxHold.value);
          if (lowStock.value) input.lowStockThreshold = Number(lowStock.value);
          if (policy.value === 'WAITLIST_FIRST' && offerSeconds.value) input.waitlistOfferSeconds = Number(offerSeconds.value);
          if (mode.value === 'BALLOT') {
            if (entriesCloseAt.value) input.entriesCloseAt = fromLocalInput(entriesCloseAt.value);
            if (confirmSeconds.value) input.ballotConfirmSeconds = Number(confirmSeconds.value);
          }
          const data = await gql<{ createCampaign: { campaign: { id: string } } }>('mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }', { input });
          location.hash = `#/campaigns/${data.createCampaign.campaign.id}`;
        } catch (error) {
          status.replaceChildren(problem(error));
        }
      },
    },
    h('label', { for: 'f-name' }, 'Name'),
    name,
    ...fields.labels,
    h('label', { for: 'f-mode' }, 'Gives tickets by (chosen once)'),
    mode,
    ballotFields,
    h('fieldset.stack', {},
      h('legend', {}, 'Release policy'),
      h('label', { for: 'f-policy' }, 'Released and expired tickets'),
      policy,
      h('p.meta', {}, 'Can be changed until the campaign opens; fixed from then on.'),
      waitlistFields,
    ),
    h('label', { for: 'f-max-hold' }, 'Longest hold, seconds, extensions included (empty: no limit; at most 2,592,000 = 30 days)'),
    maxHold,
    h('label', { for: 'f-low-stock' }, 'Low-stock alert: the CAMPAIGN_LOW_STOCK webhook fires when this many or fewer are available (empty: never)'),
    lowStock,
    h('button', { type: 'submit', 'data-testid': 'create-campaign' }, 'Create'),
    status,
  );
  sync();
  screen(h('h1', {}, session.testMode ? 'New test campaign' : 'New campaign'), form);
}

interface LatestAllocation {
  id: string;
  /** The campaign's own allocation number: 1 for its first (as in the CSV export). */
  sequence: number;
  holder: string;
  status: string;
  allocatedAt: string;
  ticket: { code: string };
  partner: { name: string };
}

const POLICY_TEXT: Record<string, string> = {
  POOL: 'return to the pool',
  VOID: 'are retired (VOID)',
  WAITLIST_FIRST: 'go to the waitlist first',
};

interface CampaignDetail {
  id: string;
  name: string;
  status: 'DRAFT' | 'OPEN' | 'CLOSED';
  /** A test campaign (issue 31), with its clock (advanceTestClock). */
  test: boolean;
  testClock: string | null;
  opensAt: string | null;
  closesAt: string | null;
  perHolderLimit: number | null;
  releasePolicy: string;
  maxHoldSeconds: number | null;
  lowStockThreshold: number | null;
  stats: Stats;
  allotments: { partner: { name: string }; size: number; used: number; remaining: number; lapsesAt: string | null; lapsedAt: string | null }[];
  waitlistLength: number;
  waitlistOfferSeconds: number;
  offers: { totalCount: number };
  mode: 'FIRST_COME' | 'BALLOT';
  entriesCloseAt: string | null;
  ballotConfirmSeconds: number | null;
  ballot: BallotFigures | null;
  timeline: TimelinePoint[];
  partnerStats: { partner: { name: string }; allocated: number; held: number; quota: number | null }[];
  allocations: { totalCount: number; edges: { node: LatestAllocation }[] };
}

interface BallotFigures {
  seedCommitment: string;
  seed: string | null;
  entriesDigest: string | null;
  entryCount: number;
  winners: number;
  tickets: number | null;
  drawnAt: string | null;
}

interface BallotRow {
  rank: number | null;
  holder: string;
  quantity: number;
  status: string;
  createdAt: string;
  partner: { name: string };
  allocations: { status: string; expiresAt: string | null }[];
}

interface WaitlistRow {
  holder: string;
  quantity: number;
  status: string;
  position: number | null;
  createdAt: string;
  offer: { expiresAt: string | null; status: string }[];
}

interface Connection<T> {
  totalCount: number;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  edges: { cursor: string; node: T }[];
}

/** Latest allocations' columns: Release only for a key that may release. */
const LATEST_HEADINGS = () => ['#', 'Code', 'Holder', 'Partner', 'Status', ...(may() ? ['Release'] : [])];

const PAGE_SIZE = 20;
const WAITLIST_FIELDS = 'holder quantity status position createdAt offer { expiresAt status }';
const BALLOT_ENTRY_FIELDS = 'rank holder quantity status createdAt partner { name } allocations { status expiresAt }';
const BALLOT_PAGE = `query($id: ID!, $first: Int, $after: String) {
  campaign(id: $id) { ballotEntries(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${BALLOT_ENTRY_FIELDS} } } } }
}`;
/** The waitlist views: offers out, then who waits (the default); one status; or every entry in join order. */
const WAITLIST_VIEWS: Record<string, { label: string; statuses: (string | null)[] }> = {
  LIVE: { label: 'Offered, then waiting', statuses: ['OFFERED', 'WAITING'] },
  WAITING: { label: 'Waiting', statuses: ['WAITING'] },
  OFFERED: { label: 'Offered', statuses: ['OFFERED'] },
  ACCEPTED: { label: 'Accepted', statuses: ['ACCEPTED'] },
  EXPIRED: { label: 'Expired', statuses: ['EXPIRED'] },
  LEFT: { label: 'Left', statuses: ['LEFT'] },
  ALL: { label: 'Every entry, in join order', statuses: [null] },
};
/** One request for a page of a view: each status's connection under its own alias. */
const waitlistQuery = (statuses: (string | null)[]) => `query($id: ID!, ${statuses.map((_, k) => `$f${k}: Int, $a${k}: String`).join(', ')}) {
  campaign(id: $id) {
    ${statuses.map((status, k) => `s${k}: waitlist(first: $f${k}, after: $a${k}${status ? `, status: ${status}` : ''}) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${WAITLIST_FIELDS} } } }`).join('\n    ')}
  }
}`;

const ALLOCATION_FIELDS = 'id sequence holder status allocatedAt ticket { code } partner { name }';
const DETAIL = `query($id: ID!) {
  campaign(id: $id) {
    id name status test testClock opensAt closesAt perHolderLimit releasePolicy maxHoldSeconds lowStockThreshold
    stats { ${STATS} }
    allotments { partner { name } size used remaining lapsesAt lapsedAt }
    waitlistLength waitlistOfferSeconds
    offers: waitlist(first: 0, status: OFFERED) { totalCount }
    mode entriesCloseAt ballotConfirmSeconds
    ballot { seedCommitment seed entriesDigest entryCount winners tickets drawnAt }
    timeline(bucket: MINUTE) { at allocated cumulative refused refusals { code count } }
    partnerStats { partner { name } allocated held quota }
    allocations(first: 15, order: NEWEST_FIRST) { totalCount edges { node { ${ALLOCATION_FIELDS} } } }
  }
}`;
const SEARCH = `query($id: ID!, $holder: String, $code: String) {
  campaign(id: $id) { allocations(first: 50, order: NEWEST_FIRST, holder: $holder, code: $code) { totalCount edges { node { ${ALLOCATION_FIELDS} } } } }
}`;

/** "Opens 1 Dec 2026, 21:00 CET" or "Opens when opened by hand"; the same for closing. */
function windowText(c: CampaignDetail): (Node | string)[] {
  return [
    c.opensAt ? h('span', {}, 'opens ', when(c.opensAt)) : 'opens as soon as it is opened',
    ' · ',
    c.closesAt ? h('span', {}, 'closes ', when(c.closesAt)) : 'closes only when closed by hand',
  ];
}

export async function campaign(id: string): Promise<void> {
  const figures = h('dl.figures', { 'data-testid': 'figures' });
  const bar = h('div', { 'data-testid': 'live-bar' });
  const chart = timelineChart();
  const partnersBody = h('tbody');
  const latest = h('tbody', { 'data-testid': 'latest' });
  const latestCount = h('p.meta');
  const allotments = h('tbody', { 'data-testid': 'allotments' });
  const waitlistSummary = h('p', { 'data-testid': 'waitlist-summary' });
  const waitlist = h('tbody', { 'data-testid': 'waitlist' });
  const ballotSummary = h('div', { 'data-testid': 'ballot-summary' });
  const ballotEntries = h('tbody', { 'data-testid': 'ballot-entries' });
  const ballotHeading = h('h2', {}, 'Ballot');
  const ballotStatus = h('div');
  const hold = (e: BallotRow) => {
    const a = e.allocations[0];
    if (!a) return '—';
    if (a.status === 'HELD') return h('span', {}, 'held until ', when(a.expiresAt));
    return a.status.toLowerCase();
  };
  let ballotDrawn: boolean | null = null;
  const ballotPager = pager({
    size: PAGE_SIZE,
    testid: 'ballot-entries',
    fetch: async (after, first) => {
      const data = await gql<{ campaign: { ballotEntries: Connection<BallotRow> } }>(BALLOT_PAGE, { id, first, after });
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
    show: (page) => ballotEntries.replaceChildren(...rowsOr(page.rows, 6, ballotDrawn ? 'The draw had no entries.' : 'No entries yet.')),
  });
  const ballotSection = h('section', { hidden: true, 'data-testid': 'ballot' }, ballotHeading, ballotSummary, table(['Rank', 'Holder', 'Partner', 'Tickets', 'Status', 'Hold'], ballotEntries), ballotPager.element, ballotStatus);

  // The waitlist, a page at a time: a view's statuses are walked in order (offers out, then who
  // waits), so a page may end one status's entries and begin the next one's.
  const waitlistView = h('select', { id: 'w-view', 'data-read': true, 'data-testid': 'waitlist-view' },
    ...Object.entries(WAITLIST_VIEWS).map(([value, v]) => h('option', { value }, v.label)),
  ) as HTMLSelectElement;
  const waitlistStatus = h('div');
  const entryRow = (e: WaitlistRow) =>
    h('tr', {},
      h('td', {}, e.position === null ? '—' : String(e.position)),
      h('td', {}, e.holder),
      h('td', {}, fmt(e.quantity)),
      h('td', {}, h(`span.entry.${e.status.toLowerCase()}`, {}, e.status)),
      h('td', {}, when(e.createdAt)),
      h('td', {}, e.status === 'OFFERED' && e.offer[0] ? h('span', {}, 'offered until ', when(e.offer[0].expiresAt)) : e.offer.length ? `${fmt(e.offer.length)} offered` : '—'),
    );
  const waitlistPager = pager({
    size: PAGE_SIZE,
    testid: 'waitlist',
    fetch: async (start, size) => {
      const statuses = WAITLIST_VIEWS[waitlistView.value]!.statuses;
      const from = start ? (JSON.parse(start) as { k: number; after: string | null }) : { k: 0, after: null };
      const variables: Record<string, unknown> = { id };
      statuses.forEach((_, k) => {
        variables[`f${k}`] = k < from.k ? 0 : size;
        variables[`a${k}`] = k === from.k ? from.after : null;
      });
      const data = await gql<{ campaign: Record<string, Connection<WaitlistRow>> }>(waitlistQuery(statuses), variables);
      const pages = statuses.map((_, k) => data.campaign[`s${k}`]!);
      const rows: HTMLElement[] = [];
      let next: { k: number; after: string | null } | null = null;
      for (let k = from.k; k < pages.length; k += 1) {
        const page = pages[k]!;
        const room = size - rows.length;
        const used = page.edges.slice(0, room);
        rows.push(...used.map(({ node }) => entryRow(node)));
        if (rows.length < size) continue;
        if (used.length < page.edges.length || page.pageInfo.hasNextPage) {
          // The page is full and this status goes on: the next page goes on after its last row.
          next = { k, after: used.at(-1)?.cursor ?? (k === from.k ? from.after : null) };
        } else {
          // This status is done; the next page starts with the next status that has entries.
          const later = pages.findIndex((p, j) => j > k && p.edges.length > 0);
          if (later !== -1) next = { k: later, after: null };
        }
        break;
      }
      return { rows, endCursor: next && JSON.stringify(next), hasNextPage: next !== null, totalCount: pages.reduce((n, p) => n + p.totalCount, 0) };
    },
    show: (page) => waitlist.replaceChildren(...rowsOr(page.rows, 6, waitlistView.value === 'LIVE' ? 'Nobody is waiting.' : 'No entries in this view.')),
  });
  waitlistView.addEventListener('change', () => void waitlistPager.reset().catch((error: unknown) => waitlistStatus.replaceChildren(problem(error))));
  const waitlistTable = h('div', {},
    h('div.inline', {}, h('label', { for: 'w-view' }, 'Show'), waitlistView),
    table(['Position', 'Holder', 'Tickets', 'Status', 'Joined', 'Offer'], waitlist),
    waitlistPager.element,
    waitlistStatus,
  );
  // A ballot's returned tickets pass on to its LOST entries: it has no waitlist to show.
  const waitlistSection = h('section', { 'data-testid': 'waitlist-section' }, h('h2', {}, 'Waitlist'), waitlistSummary, waitlistTable);
  const actions = h('div.actions');
  const actionStatus = h('div');
  const title = h('h1', {}, '…');
  const idLine = h('p.meta', {}, 'Campaign id ', copyable(id, 'campaign-id', 'Copy id'));
  const meta = h('p.meta');
  const editSlot = h('div');
  const loadSection = may() ? h('section', { 'data-testid': 'load-section' }, h('h2', {}, 'Load tickets'), loadTicketsForm(id)) : null;
  const search = searchSection(id, () => void showDetail());
  const liveSection = h('section', {}, h('h2', {}, 'Live'), bar, figures);
  const columns = h('section.columns', {},
    h('div', {}, h('h2', {}, 'Partners'), table(['Partner', 'Allocated', 'Held', 'Quota'], partnersBody)),
    h('div', { 'data-testid': 'latest-section' }, h('h2', {}, 'Latest allocations'), latestCount, table(LATEST_HEADINGS(), latest, {}, { stacked: true })),
  );
  const allotmentSection = h('section', {}, h('h2', {}, 'Allotments'), table(['Partner', 'Size', 'Used', 'Remaining', 'Lapses'], allotments));
  const body = h('div');
  screen(h('p', {}, h('a', { href: '#/campaigns' }, '← Campaigns')), title, idLine, meta, actions, actionStatus, editSlot, body);

  let placed: string | null = null;
  const place = (c: CampaignDetail) => {
    const drawn = c.mode === 'BALLOT' && Boolean(c.ballot?.drawnAt);
    if (`${c.status} ${drawn}` === placed) return;
    placed = `${c.status} ${drawn}`;
    // Loading tickets is for a campaign still to give them: not a CLOSED one, nor a drawn ballot.
    const load = c.status === 'CLOSED' || drawn ? null : loadSection;
    body.replaceChildren(
      ...present(
        // A DRAFT campaign is set up first: loading tickets leads, the (empty) figures follow.
        ...(c.status === 'DRAFT'
          ? [load, liveSection, ballotSection, chart.section, columns, search, allotmentSection, waitlistSection]
          : drawn
            ? // After the draw: the ranking and the winners' holds lead; no claims chart (a ballot takes
              // no claims) and no loading.
              [ballotSection, liveSection, columns, search, allotmentSection]
            : [liveSection, ballotSection, chart.section, columns, search, allotmentSection, waitlistSection, load]),
      ),
    );
  };

  const showDetail = async () => {
    const data = await gql<{ campaign: CampaignDetail | null }>(DETAIL, { id });
    const c = data.campaign;
    if (!c) {
      title.textContent = 'No such campaign';
      idLine.hidden = true;
      body.replaceChildren(h('p.empty', {}, 'There is no campaign with this id. ', h('a', { href: '#/campaigns' }, 'Back to the campaigns.')));
      return;
    }
    title.replaceChildren(c.name, c.test ? h('span.test-mark', { 'data-testid': 'test-mark' }, 'TEST') : '');
    place(c);
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
    actions.replaceChildren(
      ...present(
      c.mode === 'BALLOT' && c.status === 'OPEN' && !c.ballot?.drawnAt ? action('Draw', { 'data-testid': 'draw', onclick: () => draw(c.ballot?.entryCount ?? 0) }) : '',
      c.status === 'DRAFT' ? action('Open', { 'data-testid': 'open', onclick: () => transition('openCampaign', 'Open this campaign for claims?') }) : '',
      c.status !== 'CLOSED' ? action('Edit', { class: 'secondary', 'data-testid': 'edit', onclick: () => edit(c) }) : '',
      c.status !== 'CLOSED' ? action('Close', { class: 'danger', 'data-testid': 'close', onclick: () => transition('closeCampaign', 'Close this campaign? No claim will be served after this.') }) : '',
      // Test mode's controls: a live campaign is copied; a test campaign's clock moves, or it resets.
      c.test ? '' : action('Test copy…', { class: 'secondary', 'data-testid': 'test-copy', onclick: () => panel(testCopyForm({ id, name: c.name, total: c.stats.total }, closePanel)) }),
      c.test ? action('Advance clock…', { class: 'secondary', 'data-testid': 'advance-clock', onclick: () => panel(advanceClockForm(id, clockMoved, closePanel)) }) : '',
      c.test ? action('Reset', { class: 'secondary', 'data-testid': 'reset-test', onclick: () => void resetTest() }) : '',
      ),
    );
    partnersBody.replaceChildren(
      ...rowsOr(
        c.partnerStats.map((p) => h('tr', {}, h('td', {}, p.partner.name), h('td', {}, fmt(p.allocated)), h('td', {}, fmt(p.held)), h('td', {}, p.quota === null ? 'none' : fmt(p.quota)))),
        4,
        'No partner has claimed here yet, and none has a quota.',
      ),
    );
    const lapse = (a: CampaignDetail['allotments'][number]) => (a.lapsedAt ? h('span', {}, 'lapsed ', when(a.lapsedAt)) : a.lapsesAt ? when(a.lapsesAt) : 'when the campaign ends');
    allotments.replaceChildren(
      ...rowsOr(
        c.allotments.map((a) => h('tr', {}, h('td', {}, a.partner.name), h('td', {}, fmt(a.size)), h('td', {}, fmt(a.used)), h('td', {}, fmt(a.remaining)), h('td', {}, lapse(a)))),
        5,
        'No allotments: every ticket is in the general pool.',
      ),
    );
    const hasWaitlist = c.releasePolicy === 'WAITLIST_FIRST';
    waitlistSummary.textContent = hasWaitlist
      ? `${fmt(c.waitlistLength)} waiting · ${fmt(c.offers.totalCount)} offers out, each held ${fmt(c.waitlistOfferSeconds)} s`
      : 'No waitlist: released tickets do not go to a waitlist under this release policy.';
    waitlistTable.hidden = !hasWaitlist;
    // `#` is the allocation's sequence: the campaign's own number, 1 for its first, as in the CSV export.
    latest.replaceChildren(...rowsOr(c.allocations.edges.map(({ node }) => allocationRow(node)), LATEST_HEADINGS().length, 'No allocations yet.'));
    latestCount.textContent = c.allocations.totalCount > 0 ? `${fmt(c.allocations.totalCount)} allocations in all, released ones included.` : '';
    chart.draw(c);
    // The waitlist's and the ballot's current pages, read again.
    const waitlistRead =
      hasWaitlist && c.mode !== 'BALLOT'
        ? waitlistPager.refresh().then(
            () => waitlistStatus.replaceChildren(),
            (error: unknown) => waitlistStatus.replaceChildren(problem(error)),
          )
        : undefined;
    await Promise.all([waitlistRead, showBallot(c)]);
  };

  const allocationRow = (a: LatestAllocation) =>
    stackRow(LATEST_HEADINGS(), { 'data-testid': `allocation-${a.id}` },
      h('td', {}, String(a.sequence)),
      h('td.code', {}, a.ticket.code),
      h('td', {}, a.holder),
      h('td', {}, a.partner.name),
      h('td', {}, a.status),
      ...(may() ? [h('td', {}, a.status === 'ACTIVE' || a.status === 'HELD' ? action('Release', { class: 'secondary', 'data-testid': `release-${a.id}`, 'aria-label': `Release ${a.ticket.code}`, onclick: () => release(a) }) : '')] : []),
    );

  const release = async (a: LatestAllocation) => {
    if (!confirm(`Release ticket ${a.ticket.code} of ${a.holder}? It goes back as the release policy says.`)) return;
    try {
      await gql('mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code message } } }', { id: a.id });
      await showDetail();
    } catch (error) {
      actionStatus.replaceChildren(problem(error));
    }
  };

  const showBallot = async (c: CampaignDetail) => {
    ballotSection.hidden = c.mode !== 'BALLOT';
    waitlistSection.hidden = c.mode === 'BALLOT';
    if (c.mode !== 'BALLOT') return;
    const b = c.ballot;
    const closes = c.entriesCloseAt ? h('span', {}, 'entries close ', when(c.entriesCloseAt)) : 'entries close at the draw';
    const confirmWithin = `winners confirm within ${fmt(c.ballotConfirmSeconds ?? 0)} s`;
    if (!b) {
      ballotHeading.textContent = 'Ballot';
      ballotSummary.replaceChildren(h('p', {}, 'Entries open when the campaign opens · ', closes, ` · ${confirmWithin}.`));
    } else if (!b.drawnAt) {
      ballotHeading.textContent = 'Ballot — taking entries';
      ballotSummary.replaceChildren(
        h('p', { 'data-testid': 'ballot-count' }, `${fmt(b.entryCount)} entries · `, closes, ` · ${confirmWithin}`),
        h('p', {}, 'Seed commitment (published at the opening): ', h('code', { 'data-testid': 'seed-commitment' }, b.seedCommitment)),
      );
    } else {
      ballotHeading.textContent = 'Ballot — drawn';
      ballotSummary.replaceChildren(
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
    const reading = ballotDrawn === drawn ? ballotPager.refresh() : ballotPager.reset();
    ballotDrawn = drawn;
    await reading.then(
      () => ballotStatus.replaceChildren(),
      (error: unknown) => ballotStatus.replaceChildren(problem(error)),
    );
  };

  const edit = (c: CampaignDetail) => {
    const name = h('input', { id: 'f-name', value: c.name, required: true, maxlength: '200', 'data-testid': 'edit-name' }) as HTMLInputElement;
    const fields = windowFields(c);
    // What updateCampaign changes besides: the hold cap, the low-stock alert and the offer time of a
    // DRAFT or OPEN campaign, the release policy while it is DRAFT.
    const numberOf = (input: HTMLInputElement, value: number | null) => {
      input.value = value === null ? '' : String(value);
      return input;
    };
    const maxHold = numberOf(numberInput('f-edit-max-hold', 'edit-max-hold', 'no limit', '2592000'), c.maxHoldSeconds);
    const lowStock = numberOf(numberInput('f-edit-low-stock', 'edit-low-stock', 'never', '10000000'), c.lowStockThreshold);
    const offerSeconds = numberOf(numberInput('f-edit-offer', 'edit-offer-seconds', '900', '2592000'), c.waitlistOfferSeconds);
    const draft = c.status === 'DRAFT';
    const policy = h('select', { id: 'f-edit-policy', 'data-testid': 'edit-release-policy' },
      ...Object.entries(POLICY_OPTION)
        .filter(([value]) => !(c.mode === 'BALLOT' && value === 'WAITLIST_FIRST'))
        .map(([value, text]) => h('option', { value, selected: value === c.releasePolicy }, text)),
    ) as HTMLSelectElement;
    const offerField = h('div.stack', { 'data-testid': 'edit-waitlist-fields' }, h('label', { for: 'f-edit-offer' }, 'A waitlist offer is held for, seconds'), offerSeconds);
    const syncOffer = () => (offerField.hidden = policy.value !== 'WAITLIST_FIRST');
    policy.addEventListener('change', syncOffer);
    syncOffer();
    const status = h('div');
    const form = h(
      'form.stack.panel',
      {
        'data-testid': 'edit-form',
        onsubmit: async (e: Event) => {
          e.preventDefault();
          try {
            const input: Record<string, unknown> = {
              name: name.value,
              perHolderLimit: fields.limit.value ? Number(fields.limit.value) : null,
              opensAt: fromLocalInput(fields.opensAt.value),
              closesAt: fromLocalInput(fields.closesAt.value),
              maxHoldSeconds: maxHold.value ? Number(maxHold.value) : null,
              lowStockThreshold: lowStock.value ? Number(lowStock.value) : null,
            };
            if (draft) input.releasePolicy = policy.value;
            if (policy.value === 'WAITLIST_FIRST' && offerSeconds.value) input.waitlistOfferSeconds = Number(offerSeconds.value);
            await gql('mutation($id: ID!, $input: UpdateCampaignInput!) { updateCampaign(id: $id, input: $input) { campaign { id } } }', { id, input });
            editSlot.replaceChildren();
            await showDetail();
          } catch (error) {
            status.replaceChildren(problem(error));
          }
        },
      },
      h('h2', {}, 'Edit campaign'),
      h('label', { for: 'f-name' }, 'Name'),
      name,
      ...fields.labels,
      draft
        ? h('fieldset.stack', {},
            h('legend', {}, 'Release policy'),
            h('label', { for: 'f-edit-policy' }, 'Released and expired tickets'),
            policy,
            h('p.meta', {}, 'Can be changed until the campaign opens; fixed from then on.'),
            offerField,
          )
        : c.releasePolicy === 'WAITLIST_FIRST' ? offerField : '',
      h('label', { for: 'f-edit-max-hold' }, 'Longest hold, seconds, extensions included (empty: no limit; holds made from now on)'),
      maxHold,
      h('label', { for: 'f-edit-low-stock' }, 'Low-stock alert when available falls to (empty: never)'),
      lowStock,
      h('div.fixed', { 'data-testid': 'fixed-settings' },
        h('p', {}, draft ? 'Fixed when the campaign was created:' : 'Fixed when the campaign was created, or once it opened:'),
        h('ul', {},
          h('li', {}, `Gives tickets ${c.mode === 'BALLOT' ? 'by ballot' : 'first come, first served'}`),
          draft ? '' : h('li', {}, 'Released tickets ', h('span', { 'data-testid': 'fixed-release-policy' }, POLICY_TEXT[c.releasePolicy] ?? c.releasePolicy)),
          c.mode === 'BALLOT' ? h('li', {}, `Winners confirm within ${fmt(c.ballotConfirmSeconds ?? 0)} s`) : '',
        ),
      ),
      h('div.actions', {}, h('button', { type: 'submit', 'data-testid': 'save' }, 'Save'), h('button.secondary', { type: 'button', onclick: () => editSlot.replaceChildren() }, 'Cancel')),
      status,
    );
    editSlot.replaceChildren(form);
    name.focus();
  };

  const draw = async (entries: number) => {
    if (!confirm(`Draw the ballot now? Entries close, ${fmt(entries)} entries are ranked and the winners get their holds. It cannot be undone.`)) return;
    try {
      await gql('mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id });
      await showDetail();
    } catch (error) {
      actionStatus.replaceChildren(problem(error));
    }
  };

  // One in-page form at a time under the actions: editing, a test copy, the test clock.
  const closePanel = () => editSlot.replaceChildren();
  const panel = (form: HTMLElement) => {
    actionStatus.replaceChildren();
    editSlot.replaceChildren(form);
  };
  const clockMoved = async (message: string) => {
    closePanel();
    actionStatus.replaceChildren(h('p', { role: 'status', 'data-testid': 'clock-moved' }, message));
    await showDetail();
  };

  const resetTest = async () => {
    if (!confirm('Reset this test campaign to just after its opening? Every allocation, hold, waitlist and ballot entry of it is deleted.')) return;
    try {
      await gql('mutation($id: ID!) { resetTestCampaign(id: $id) { campaign { id } } }', { id });
      actionStatus.replaceChildren(h('p', { role: 'status' }, 'The test campaign is back to its opening.'));
      await showDetail();
    } catch (error) {
      actionStatus.replaceChildren(problem(error));
    }
  };

  const transition = async (mutation: 'openCampaign' | 'closeCampaign', question: string) => {
    if (!confirm(question)) return;
    try {
      await gql(`mutation($id: ID!) { ${mutation}(id: $id) { campaign { id status } } }`, { id });
      await showDetail();
    } catch (error) {
      actionStatus.replaceChildren(problem(error));
    }
  };

  try {
    await showDetail();
  } catch (error) {
    title.replaceWith(problem(error));
    return;
  }
  let detailTimer: ReturnType<typeof setTimeout> | null = null;
  // Entries move no ticket figures, so campaignStats does not wake the page for them, and refusals
  // move none either: poll the detail every few seconds as well.
  const poll = setInterval(() => void showDetail().catch(() => undefined), 5000);
  const unsubscribe = subscription().subscribe<{ campaignStats: Stats }>(
    { query: `subscription($id: ID!) { campaignStats(id: $id) { ${STATS} } }`, variables: { id } },
    {
      next: ({ data }) => {
        if (!data) return;
        const s = data.campaignStats;
        bar.replaceChildren(fillBar(s));
        figures.replaceChildren(
          ...(
            [
              ['Total', fmt(s.total)],
              ['Allocated', fmt(s.allocated)],
              ['Held', fmt(s.held)],
              ['Available', fmt(s.available)],
              ['Allotted', fmt(s.allotted)],
              ['Retired', fmt(s.void)],
              ['Fill', pct(s.fillRate)],
              ['Sold out', s.soldOut ? h('span', {}, 'yes, since ', when(s.soldOutAt)) : s.soldOutAt ? h('span', {}, 'no (first sold out ', when(s.soldOutAt), ')') : 'no'],
            ] as const
          ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', { 'data-testid': `figure-${k.toLowerCase().replace(' ', '-')}` }, v)]),
        );
        // The rest of the page follows, at most once a second.
        detailTimer ??= setTimeout(() => {
          detailTimer = null;
          void showDetail().catch(() => undefined);
        }, 1000);
      },
      error: (error) => figures.replaceChildren(problem(error)),
      complete: () => undefined,
    },
  );
  onLeave(() => {
    unsubscribe();
    clearInterval(poll);
    if (detailTimer) clearTimeout(detailTimer);
  });
}

/** Find a holder's or a ticket's allocations, release them, and export every allocation as CSV. */
function searchSection(campaignId: string, changed: () => void): HTMLElement {
  const field = h('select', { id: 's-field', 'data-testid': 'search-field' }, h('option', { value: 'holder' }, 'Holder'), h('option', { value: 'code' }, 'Ticket code')) as HTMLSelectElement;
  const value = h('input', { id: 's-value', type: 'search', required: true, maxlength: '256', 'data-testid': 'search-value' }) as HTMLInputElement;
  const results = h('tbody', { 'data-testid': 'search-results' });
  const headings = ['Code', 'Holder', 'Partner', 'Status', 'Allocated', ...(may() ? ['Release'] : [])];
  const resultTable = table(headings, results, {}, { stacked: true });
  resultTable.hidden = true;
  const status = h('div');
  const exportStatus = h('span.meta', { 'data-testid': 'export-status', role: 'status' });
  const run = async () => {
    try {
      const variables = { id: campaignId, holder: field.value === 'holder' ? value.value : null, code: field.value === 'code' ? value.value : null };
      const data = await gql<{ campaign: { allocations: { totalCount: number; edges: { node: LatestAllocation }[] } } }>(SEARCH, variables);
      const page = data.campaign.allocations;
      status.replaceChildren(h('p.meta', { 'data-testid': 'search-count' }, `${fmt(page.totalCount)} found${page.totalCount > page.edges.length ? ` (the newest ${page.edges.length} shown)` : ''}.`));
      resultTable.hidden = false;
      results.replaceChildren(
        ...rowsOr(
          page.edges.map(({ node: a }) =>
            stackRow(headings, {},
              h('td.code', {}, a.ticket.code),
              h('td', {}, a.holder),
              h('td', {}, a.partner.name),
              h('td', {}, a.status),
              h('td', {}, when(a.allocatedAt)),
              ...(may() ? [h('td', {}, a.status === 'ACTIVE' || a.status === 'HELD'
                ? action('Release', { class: 'secondary', 'data-testid': `search-release-${a.id}`, onclick: async () => {
                    if (!confirm(`Release ticket ${a.ticket.code} of ${a.holder}?`)) return;
                    try {
                      await gql('mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } error { code message } } }', { id: a.id });
                      await run();
                      changed();
                    } catch (error) {
                      status.replaceChildren(problem(error));
                    }
                  } })
                : '')] : []),
            ),
          ),
          headings.length,
          `No allocation of ${field.value === 'holder' ? 'holder' : 'ticket'} "${value.value}".`,
        ),
      );
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };
  const exportCsv = async () => {
    const parts = [HEADER];
    let after: string | null = null;
    let written = 0;
    try {
      for (;;) {
        const data: { campaign: { allocations: { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string | null }; edges: { node: ExportedAllocation }[] } } } = await gql(EXPORT_QUERY, { id: campaignId, after });
        const page = data.campaign.allocations;
        parts.push(...page.edges.map((e) => csvRow(e.node)));
        written += page.edges.length;
        exportStatus.textContent = `${fmt(written)} of ${fmt(page.totalCount)}…`;
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      const link = h('a', { href: URL.createObjectURL(new Blob(parts, { type: 'text/csv' })), download: `allocations-${campaignId}.csv` }) as HTMLAnchorElement;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
      exportStatus.textContent = `${fmt(written)} allocations exported.`;
    } catch (error) {
      exportStatus.replaceChildren(problem(error));
    }
  };
  return h('section', { 'data-testid': 'allocations-section' },
    h('h2', {}, 'Allocations'),
    h('form.inline', { role: 'search', onsubmit: (e: Event) => (e.preventDefault(), void run()) },
      h('label', { for: 's-field' }, 'Find by'), field,
      h('label.visually-hidden', { for: 's-value' }, 'Holder or ticket code'), value,
      h('button', { type: 'submit', 'data-testid': 'search' }, 'Find'),
      h('button.secondary', { type: 'button', 'data-testid': 'export', onclick: () => void exportCsv() }, 'Export CSV'),
      exportStatus,
    ),
    status,
    resultTable,
  );
}

/** Codes from a pasted list or a CSV file (first column; a header row without digits is skipped). */
export function parseCodes(text: string): string[] {
  const codes: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const first = line.split(',')[0]!.trim().replace(/^"(.*)"$/, '$1');
    if (first) codes.push(first);
  }
  if (codes.length > 0 && /^(code|codes|ticket|tickets)$/i.test(codes[0]!)) codes.shift();
  return codes;
}

const plural = (n: number, word: string) => (n === 1 ? word : `${word}s`);

/** What a load did, in words: "loaded 120 new tickets, 1 duplicate skipped". */
const loadedText = (loaded: number, duplicates: number) =>
  `loaded ${fmt(loaded)} new ${plural(loaded, 'ticket')}, ${fmt(duplicates)} ${plural(duplicates, 'duplicate')} skipped${duplicates ? ' (already in the campaign, or repeated in the list)' : ''}`;

function loadTicketsForm(campaignId: string): HTMLElement {
  const text = h('textarea', { id: 'f-codes', rows: '6', placeholder: 'One code per line', 'data-testid': 'codes' }) as HTMLTextAreaElement;
  const file = h('input', { id: 'f-file', type: 'file', accept: '.csv,.txt,text/csv,text/plain', 'data-testid': 'codes-file' }) as HTMLInputElement;
  const progress = h('progress', { max: '1', value: '0', 'data-testid': 'load-progress', 'aria-label': 'Codes checked' }) as HTMLProgressElement;
  const status = h('div', { 'data-testid': 'load-status', role: 'status' });
  const form = h(
    'form.stack',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const source = file.files?.[0] ? await file.files[0].text() : text.value;
        const codes = parseCodes(source);
        if (codes.length === 0) {
          status.textContent = 'No codes to load.';
          return;
        }
        const BATCH = 10_000;
        let loaded = 0;
        let duplicates = 0;
        progress.max = codes.length;
        progress.value = 0;
        try {
          for (let i = 0; i < codes.length; i += BATCH) {
            // loadTickets answers what this call added and what it skipped: the message adds them up.
            const data = await gql<{ loadTickets: { loaded: number; duplicates: number; campaign: { stats: { total: number } } } }>(
              'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates campaign { stats { total } } } }',
              { id: campaignId, codes: codes.slice(i, i + BATCH) },
            );
            loaded += data.loadTickets.loaded;
            duplicates += data.loadTickets.duplicates;
            const total = data.loadTickets.campaign.stats.total;
            const checked = Math.min(codes.length, i + BATCH);
            progress.value = checked;
            status.textContent = checked < codes.length ? `Checked ${fmt(checked)} of ${fmt(codes.length)} codes: ${loadedText(loaded, duplicates)} so far…` : `Done: ${loadedText(loaded, duplicates)}. The campaign has ${fmt(total)} ${plural(total, 'ticket')}.`;
          }
          text.value = '';
          file.value = '';
        } catch (error) {
          status.replaceChildren(
            h('span', {}, loaded + duplicates > 0 ? `Stopped after ${fmt(loaded + duplicates)} of ${fmt(codes.length)} codes: ${loadedText(loaded, duplicates)}. Loading the same list again loads the rest. ` : ''),
            problem(error),
          );
        }
      },
    },
    h('label', { for: 'f-codes' }, 'Ticket codes, one per line'),
    text,
    h('label', { for: 'f-file' }, 'or a CSV file (first column)'),
    file,
    h('button', { type: 'submit', 'data-testid': 'load' }, 'Load'),
    progress,
    status,
  );
  return form;
}
