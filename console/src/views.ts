// The console's screens, plain DOM: campaigns with a fill bar, a campaign's live page, forms.
// Webhook endpoints and their deliveries are in webhooks.ts.
import uPlot from 'uplot';
import { ApiError, gql, session, signOut, subscription } from './api';
import { webhookDeliveries, webhooks } from './webhooks';

export interface Stats {
  total: number;
  allocated: number;
  held: number;
  available: number;
  allotted: number;
  void: number;
  fillRate: number;
  soldOutAt: string | null;
}

type Child = Node | string | null | undefined | false;

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

export const fmt = (n: number) => n.toLocaleString('en-US');
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export function fillBar(stats: Stats): HTMLElement {
  const total = Math.max(stats.total, 1);
  return h(
    'div.fill',
    { 'data-testid': 'fill-bar', 'data-allocated': String(stats.allocated), 'data-total': String(stats.total), title: `${fmt(stats.allocated)} allocated, ${fmt(stats.held)} held of ${fmt(stats.total)}` },
    h('div.fill-allocated', { style: `width:${(stats.allocated / total) * 100}%` }),
    h('div.fill-held', { style: `width:${(stats.held / total) * 100}%` }),
  );
}

let teardown: (() => void) | null = null;

export function screen(...children: Child[]): void {
  teardown?.();
  teardown = null;
  const root = document.getElementById('app')!;
  root.replaceChildren(
    h(
      'header',
      {},
      h('a.brand', { href: '#/campaigns' }, 'Tessera'),
      h('nav', {}, h('a', { href: '#/campaigns' }, 'Campaigns'), h('a', { href: '#/new' }, 'New campaign'), h('a', { href: '#/webhooks' }, 'Webhooks'), h('a', { href: '/graphql' }, 'GraphiQL')),
      h('button.link', { onclick: () => (signOut(), (location.hash = '#/'), render()), 'data-testid': 'sign-out' }, 'Sign out'),
    ),
    h('main', {}, ...children),
  );
}

export function problem(error: unknown): HTMLElement {
  const message = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
  return h('p.error', { role: 'alert' }, message);
}

export function signIn(): void {
  const root = document.getElementById('app')!;
  const input = h('input', { type: 'password', placeholder: 'Admin API key', autocomplete: 'off', 'data-testid': 'key' }) as HTMLInputElement;
  const status = h('p');
  const form = h(
    'form.signin',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        session.key = input.value.trim();
        try {
          await gql('{ auditLog(first: 1) { totalCount } }');
          location.hash = '#/campaigns';
          render();
        } catch (error) {
          session.key = null;
          status.replaceWith(problem(error));
        }
      },
    },
    h('h1', {}, 'Tessera console'),
    h('p', {}, 'Paste the admin API key. It is kept for this tab only.'),
    input,
    h('button', { type: 'submit', 'data-testid': 'sign-in' }, 'Sign in'),
    status,
  );
  root.replaceChildren(form);
  input.focus();
}

interface CampaignRow {
  id: string;
  name: string;
  status: string;
  stats: Stats;
}

export async function campaigns(): Promise<void> {
  const table = h('tbody');
  screen(h('h1', {}, 'Campaigns'), h('table.campaigns', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Status'), h('th', {}, 'Fill'), h('th', {}, 'Allocated'), h('th', {}, 'Total'))), table));
  const refresh = async () => {
    try {
      const data = await gql<{ campaigns: { edges: { node: CampaignRow }[] } }>(
        '{ campaigns(first: 100) { edges { node { id name status stats { total allocated held allotted available void fillRate soldOutAt } } } } }',
      );
      table.replaceChildren(
        ...data.campaigns.edges.map(({ node }) =>
          h(
            'tr',
            { 'data-testid': `campaign-${node.id}` },
            h('td', {}, h('a', { href: `#/campaigns/${node.id}` }, node.name)),
            h('td', {}, h(`span.status.${node.status.toLowerCase()}`, {}, node.status)),
            h('td', {}, fillBar(node.stats)),
            h('td', {}, `${fmt(node.stats.allocated)} (${pct(node.stats.fillRate)})`),
            h('td', {}, fmt(node.stats.total)),
          ),
        ),
      );
    } catch (error) {
      table.replaceChildren(h('tr', {}, h('td', { colspan: '5' }, problem(error))));
    }
  };
  await refresh();
  const timer = setInterval(refresh, 2000);
  teardown = () => clearInterval(timer);
}

export function newCampaign(): void {
  const name = h('input', { name: 'name', required: true, maxlength: '200', 'data-testid': 'campaign-name' }) as HTMLInputElement;
  const limit = h('input', { name: 'limit', type: 'number', min: '1', placeholder: 'unlimited' }) as HTMLInputElement;
  const opensAt = h('input', { name: 'opensAt', type: 'datetime-local' }) as HTMLInputElement;
  const closesAt = h('input', { name: 'closesAt', type: 'datetime-local' }) as HTMLInputElement;
  const mode = h('select', { name: 'mode', 'data-testid': 'campaign-mode' },
    h('option', { value: 'FIRST_COME' }, 'First come, first served'),
    h('option', { value: 'BALLOT' }, 'Ballot: entries, then a draw'),
  ) as HTMLSelectElement;
  const entriesCloseAt = h('input', { name: 'entriesCloseAt', type: 'datetime-local' }) as HTMLInputElement;
  const confirmSeconds = h('input', { name: 'ballotConfirmSeconds', type: 'number', min: '1', placeholder: 'server default', 'data-testid': 'ballot-confirm-seconds' }) as HTMLInputElement;
  const ballotFields = h('fieldset.stack', { hidden: true },
    h('legend', {}, 'Ballot'),
    h('label', {}, 'Entries close at (empty: at the draw)', entriesCloseAt),
    h('label', {}, "Winners confirm within (seconds)", confirmSeconds),
  );
  mode.addEventListener('change', () => (ballotFields.hidden = mode.value !== 'BALLOT'));
  const status = h('p');
  screen(
    h('h1', {}, 'New campaign'),
    h(
      'form.stack',
      {
        onsubmit: async (e: Event) => {
          e.preventDefault();
          try {
            const input: Record<string, unknown> = { name: name.value };
            if (limit.value) input.perHolderLimit = Number(limit.value);
            if (opensAt.value) input.opensAt = new Date(opensAt.value).toISOString();
            if (closesAt.value) input.closesAt = new Date(closesAt.value).toISOString();
            input.mode = mode.value;
            if (mode.value === 'BALLOT') {
              if (entriesCloseAt.value) input.entriesCloseAt = new Date(entriesCloseAt.value).toISOString();
              if (confirmSeconds.value) input.ballotConfirmSeconds = Number(confirmSeconds.value);
            }
            const data = await gql<{ createCampaign: { campaign: { id: string } } }>(
              'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }',
              { input },
            );
            location.hash = `#/campaigns/${data.createCampaign.campaign.id}`;
          } catch (error) {
            status.replaceChildren(problem(error));
          }
        },
      },
      h('label', {}, 'Name', name),
      h('label', {}, 'Per-holder limit', limit),
      h('label', {}, 'Opens at', opensAt),
      h('label', {}, 'Closes at', closesAt),
      h('label', {}, 'Gives tickets by', mode),
      ballotFields,
      h('button', { type: 'submit', 'data-testid': 'create-campaign' }, 'Create'),
      status,
    ),
  );
}

interface LatestAllocation {
  sequence: number;
  holder: string;
  status: string;
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
  status: string;
  opensAt: string | null;
  closesAt: string | null;
  perHolderLimit: number | null;
  releasePolicy: string;
  maxHoldSeconds: number | null;
  allotments: { partner: { name: string }; size: number; used: number; remaining: number; lapsesAt: string | null; lapsedAt: string | null }[];
  waitlistLength: number;
  waitlistOfferSeconds: number;
  head: { edges: { node: WaitlistRow }[] };
  offers: { totalCount: number; edges: { node: WaitlistRow }[] };
  mode: 'FIRST_COME' | 'BALLOT';
  entriesCloseAt: string | null;
  ballotConfirmSeconds: number | null;
  ballot: BallotFigures | null;
  ballotEntries: { totalCount: number; edges: { node: BallotRow }[] };
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
  position: number | null;
  createdAt: string;
  offer: { expiresAt: string | null; status: string }[];
}

const DETAIL = `query($id: ID!) {
  campaign(id: $id) {
    id name status opensAt closesAt perHolderLimit releasePolicy maxHoldSeconds
    allotments { partner { name } size used remaining lapsesAt lapsedAt }
    waitlistLength waitlistOfferSeconds
    head: waitlist(first: 5, status: WAITING) { edges { node { holder quantity position createdAt offer { expiresAt status } } } }
    offers: waitlist(first: 5, status: OFFERED) { totalCount edges { node { holder quantity position createdAt offer { expiresAt status } } } }
    mode entriesCloseAt ballotConfirmSeconds
    ballot { seedCommitment seed entriesDigest entryCount winners tickets drawnAt }
    ballotEntries(first: 10) { totalCount edges { node { rank holder quantity status createdAt partner { name } allocations { status expiresAt } } } }
    timeline(bucket: MINUTE) { at allocated cumulative }
    partnerStats { partner { name } allocated held quota }
    allocations(first: 15, order: NEWEST_FIRST) { edges { node { sequence holder status ticket { code } partner { name } } } }
  }
}`;

export async function campaign(id: string): Promise<void> {
  const figures = h('dl.figures', { 'data-testid': 'figures' });
  const bar = h('div', { 'data-testid': 'live-bar' });
  const chart = h('div.chart', { 'data-testid': 'timeline' });
  const partners = h('tbody');
  const latest = h('tbody', { 'data-testid': 'latest' });
  const allotments = h('tbody', { 'data-testid': 'allotments' });
  const waitlistSummary = h('p', { 'data-testid': 'waitlist-summary' });
  const waitlist = h('tbody', { 'data-testid': 'waitlist' });
  const ballotSummary = h('div', { 'data-testid': 'ballot-summary' });
  const ballotEntries = h('tbody', { 'data-testid': 'ballot-entries' });
  const ballotHeading = h('h2', {}, 'Ballot');
  const ballotSection = h('section', { hidden: true, 'data-testid': 'ballot' }, ballotHeading, ballotSummary,
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Rank'), h('th', {}, 'Holder'), h('th', {}, 'Partner'), h('th', {}, 'Tickets'), h('th', {}, 'Status'), h('th', {}, 'Hold'))), ballotEntries));
  // A ballot's returned tickets pass on to its LOST entries: it has no waitlist to show.
  const waitlistSection = h('section', {}, h('h2', {}, 'Waitlist'), waitlistSummary,
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Position'), h('th', {}, 'Holder'), h('th', {}, 'Tickets'), h('th', {}, 'Joined'), h('th', {}, 'Offer'))), waitlist));
  const actions = h('div.actions');
  const title = h('h1', {}, '…');
  const meta = h('p.meta');
  const loader = loadTicketsForm(id);
  screen(
    title,
    meta,
    actions,
    h('section', {}, h('h2', {}, 'Live'), bar, figures),
    ballotSection,
    h('section', {}, h('h2', {}, 'Allocations per minute'), chart),
    h('section.columns', {},
      h('div', {}, h('h2', {}, 'Partners'), h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Partner'), h('th', {}, 'Allocated'), h('th', {}, 'Held'), h('th', {}, 'Quota'))), partners)),
      h('div', {}, h('h2', {}, 'Latest allocations'), h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'Code'), h('th', {}, 'Holder'), h('th', {}, 'Partner'), h('th', {}, 'Status'))), latest)),
    ),
    h('section', {}, h('h2', {}, 'Allotments'),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Partner'), h('th', {}, 'Size'), h('th', {}, 'Used'), h('th', {}, 'Remaining'), h('th', {}, 'Lapses'))), allotments)),
    waitlistSection,
    h('section', {}, h('h2', {}, 'Load tickets'), loader),
  );

  let plot: uPlot | null = null;
  const showDetail = async () => {
    const data = await gql<{ campaign: (CampaignDetail & { timeline: { at: string; allocated: number; cumulative: number }[]; partnerStats: { partner: { name: string }; allocated: number; held: number; quota: number | null }[]; allocations: { edges: { node: LatestAllocation }[] } }) | null }>(DETAIL, { id });
    const c = data.campaign;
    if (!c) {
      title.textContent = 'No such campaign';
      return;
    }
    title.textContent = c.name;
    meta.replaceChildren(
      h(`span.status.${c.status.toLowerCase()}`, { 'data-testid': 'status' }, c.status),
      ` window ${c.opensAt ? new Date(c.opensAt).toLocaleString() : 'now'} – ${c.closesAt ? new Date(c.closesAt).toLocaleString() : 'open-ended'}`,
      ` · per-holder limit ${c.perHolderLimit ?? 'none'}`,
      ' · released tickets ',
      h('span', { 'data-testid': 'release-policy' }, POLICY_TEXT[c.releasePolicy] ?? c.releasePolicy),
      c.maxHoldSeconds === null ? '' : ` · holds at most ${fmt(c.maxHoldSeconds)} s`,
      c.mode === 'BALLOT' ? h('span', { 'data-testid': 'mode' }, ' · by ballot') : '',
    );
    actions.replaceChildren(
      c.mode === 'BALLOT' && c.status === 'OPEN' && !c.ballot?.drawnAt
        ? h('button', { 'data-testid': 'draw', onclick: () => draw(c.ballot?.entryCount ?? 0) }, 'Draw')
        : '',
      c.status === 'DRAFT' ? h('button', { 'data-testid': 'open', onclick: () => transition('openCampaign', 'Open this campaign for claims?') }, 'Open') : '',
      c.status !== 'CLOSED' ? h('button.danger', { 'data-testid': 'close', onclick: () => transition('closeCampaign', 'Close this campaign? No claim will be served after this.') }, 'Close') : '',
    );
    partners.replaceChildren(
      ...c.partnerStats.map((p) => h('tr', {}, h('td', {}, p.partner.name), h('td', {}, fmt(p.allocated)), h('td', {}, fmt(p.held)), h('td', {}, p.quota === null ? '—' : fmt(p.quota)))),
    );
    const lapse = (a: CampaignDetail['allotments'][number]) =>
      a.lapsedAt ? `lapsed ${new Date(a.lapsedAt).toLocaleString()}` : a.lapsesAt ? new Date(a.lapsesAt).toLocaleString() : 'when the campaign ends';
    allotments.replaceChildren(
      ...(c.allotments.length === 0
        ? [h('tr', {}, h('td.empty', { colspan: '5' }, 'No allotments: every ticket is in the general pool.'))]
        : c.allotments.map((a) =>
            h('tr', {}, h('td', {}, a.partner.name), h('td', {}, fmt(a.size)), h('td', {}, fmt(a.used)), h('td', {}, fmt(a.remaining)), h('td', {}, lapse(a))),
          )),
    );
    waitlistSummary.textContent =
      c.releasePolicy === 'WAITLIST_FIRST'
        ? `${fmt(c.waitlistLength)} waiting · ${fmt(c.offers.totalCount)} offers out, each held ${fmt(c.waitlistOfferSeconds)} s`
        : 'No waitlist: released tickets do not go to a waitlist under this release policy.';
    const entryRow = (e: WaitlistRow) =>
      h('tr', {},
        h('td', {}, e.position === null ? '—' : String(e.position)),
        h('td', {}, e.holder),
        h('td', {}, fmt(e.quantity)),
        h('td', {}, new Date(e.createdAt).toLocaleString()),
        h('td', {}, e.offer.length === 0 ? 'waiting' : `offered until ${new Date(e.offer[0]!.expiresAt ?? Date.now()).toLocaleTimeString()}`),
      );
    const rows = [...c.offers.edges, ...c.head.edges].map(({ node }) => entryRow(node));
    waitlist.replaceChildren(...(rows.length === 0 ? [h('tr', {}, h('td.empty', { colspan: '5' }, 'Nobody is waiting.'))] : rows));
    showBallot(c);
    latest.replaceChildren(
      ...c.allocations.edges.map(({ node }) =>
        h('tr', {}, h('td', {}, String(node.sequence)), h('td.code', {}, node.ticket.code), h('td', {}, node.holder), h('td', {}, node.partner.name), h('td', {}, node.status)),
      ),
    );
    // x: minutes before now (the last 10 at least), so a sale of a few minutes is not drawn on an
    // axis of years; labels give the clock time.
    const now = Math.floor(Date.now() / 60_000);
    const minutes = c.timeline.map((p) => Math.floor(Date.parse(p.at) / 60_000) - now);
    const series: uPlot.AlignedData = [minutes, c.timeline.map((p) => p.allocated), c.timeline.map((p) => p.cumulative)];
    const clock = (offset: number) => new Date((now + offset) * 60_000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    if (!plot) {
      plot = new uPlot(
        {
          width: Math.min(900, chart.clientWidth || 900),
          height: 220,
          series: [
            { value: (_u, v) => (v === null ? '--' : clock(v)) },
            { label: 'per minute', stroke: '#2563eb', fill: 'rgba(37,99,235,0.35)', paths: uPlot.paths.bars!({ size: [0.6, 40] }) },
            { label: 'total', stroke: '#16a34a', width: 2, scale: 'total', points: { show: true } },
          ],
          axes: [{ values: (_u, ticks) => ticks.map(clock) }, {}, { scale: 'total', side: 1 }],
          scales: {
            x: { time: false, range: (_u, min) => [Math.min(Number.isFinite(min) ? min : 0, -10) - 0.5, 0.5] },
            y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
            total: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
          },
        },
        series,
        chart,
      );
    } else plot.setData(series);
  };

  const showBallot = (c: CampaignDetail) => {
    ballotSection.hidden = c.mode !== 'BALLOT';
    waitlistSection.hidden = c.mode === 'BALLOT';
    if (c.mode !== 'BALLOT') return;
    const b = c.ballot;
    const closes = c.entriesCloseAt ? `entries close ${new Date(c.entriesCloseAt).toLocaleString()}` : 'entries close at the draw';
    const confirmWithin = `winners confirm within ${fmt(c.ballotConfirmSeconds ?? 0)} s`;
    if (!b) {
      ballotHeading.textContent = 'Ballot';
      ballotSummary.replaceChildren(h('p', {}, `Entries open when the campaign opens · ${closes} · ${confirmWithin}.`));
    } else if (!b.drawnAt) {
      ballotHeading.textContent = 'Ballot — taking entries';
      ballotSummary.replaceChildren(
        h('p', { 'data-testid': 'ballot-count' }, `${fmt(b.entryCount)} entries · ${closes} · ${confirmWithin}`),
        h('p', {}, 'Seed commitment (published at the opening): ', h('code', { 'data-testid': 'seed-commitment' }, b.seedCommitment)),
      );
    } else {
      ballotHeading.textContent = 'Ballot — drawn';
      ballotSummary.replaceChildren(
        h('p', { 'data-testid': 'ballot-count' },
          `Drawn ${new Date(b.drawnAt).toLocaleString()}: ${fmt(b.entryCount)} entries for ${fmt(b.tickets ?? 0)} tickets · ${fmt(b.winners)} winners · ${confirmWithin}`),
        h('dl.hashes', {},
          h('dt', {}, 'Seed'), h('dd', {}, h('code', { 'data-testid': 'seed' }, b.seed ?? '')),
          h('dt', {}, 'Commitment'), h('dd', {}, h('code', {}, b.seedCommitment)),
          h('dt', {}, 'Entries digest'), h('dd', {}, h('code', { 'data-testid': 'entries-digest' }, b.entriesDigest ?? '')),
        ),
        h('p.meta', {}, 'Anyone can recompute the draw: ', h('code', {}, `npx tessera verify-ballot --campaign ${c.id}`)),
      );
    }
    const hold = (e: BallotRow) => {
      const a = e.allocations[0];
      if (!a) return '—';
      if (a.status === 'HELD') return `held until ${new Date(a.expiresAt ?? Date.now()).toLocaleTimeString()}`;
      return a.status.toLowerCase();
    };
    const rows = c.ballotEntries.edges.map(({ node: e }) =>
      h('tr', {},
        h('td', {}, e.rank === null ? '—' : String(e.rank)),
        h('td', {}, e.holder),
        h('td', {}, e.partner.name),
        h('td', {}, fmt(e.quantity)),
        h(`td`, {}, h(`span.entry.${e.status.toLowerCase()}`, {}, e.status)),
        h('td', {}, hold(e)),
      ),
    );
    const more = c.ballotEntries.totalCount - rows.length;
    ballotEntries.replaceChildren(
      ...(rows.length === 0
        ? [h('tr', {}, h('td.empty', { colspan: '6' }, b?.drawnAt ? 'The draw had no entries.' : 'No entries yet.'))]
        : [...rows, ...(more > 0 ? [h('tr', {}, h('td.empty', { colspan: '6' }, `and ${fmt(more)} more`))] : [])]),
    );
  };

  const draw = async (entries: number) => {
    if (!confirm(`Draw the ballot now? Entries close, ${fmt(entries)} entries are ranked and the winners get their holds. It cannot be undone.`)) return;
    try {
      await gql('mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id });
      await showDetail();
    } catch (error) {
      actions.append(problem(error));
    }
  };

  const transition = async (mutation: 'openCampaign' | 'closeCampaign', question: string) => {
    if (!confirm(question)) return;
    try {
      await gql(`mutation($id: ID!) { ${mutation}(id: $id) { campaign { id status } } }`, { id });
      await showDetail();
    } catch (error) {
      actions.append(problem(error));
    }
  };

  try {
    await showDetail();
  } catch (error) {
    title.replaceWith(problem(error));
    return;
  }
  let detailTimer: ReturnType<typeof setTimeout> | null = null;
  // Entries move no ticket figures, so campaignStats does not wake the page for them: poll the
  // detail while a ballot campaign's page is shown.
  const ballotPoll = setInterval(() => {
    if (!ballotSection.hidden) void showDetail().catch(() => undefined);
  }, 2000);
  const unsubscribe = subscription().subscribe<{ campaignStats: Stats }>(
    { query: 'subscription($id: ID!) { campaignStats(id: $id) { total allocated held allotted available void fillRate soldOutAt } }', variables: { id } },
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
              ['Sold out', s.soldOutAt ? new Date(s.soldOutAt).toLocaleTimeString() : '—'],
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
  teardown = () => {
    unsubscribe();
    clearInterval(ballotPoll);
    if (detailTimer) clearTimeout(detailTimer);
  };
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

function loadTicketsForm(campaignId: string): HTMLElement {
  const text = h('textarea', { rows: '6', placeholder: 'One code per line', 'data-testid': 'codes' }) as HTMLTextAreaElement;
  const file = h('input', { type: 'file', accept: '.csv,.txt,text/csv,text/plain', 'data-testid': 'codes-file' }) as HTMLInputElement;
  const progress = h('progress', { max: '1', value: '0', 'data-testid': 'load-progress' }) as HTMLProgressElement;
  const status = h('p', { 'data-testid': 'load-status' });
  return h(
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
        try {
          for (let i = 0; i < codes.length; i += BATCH) {
            const data = await gql<{ loadTickets: { loaded: number; duplicates: number } }>(
              'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }',
              { id: campaignId, codes: codes.slice(i, i + BATCH) },
            );
            loaded += data.loadTickets.loaded;
            duplicates += data.loadTickets.duplicates;
            progress.value = Math.min(codes.length, i + BATCH);
            status.textContent = `${fmt(loaded)} loaded, ${fmt(duplicates)} duplicates skipped (${fmt(Math.min(codes.length, i + BATCH))} of ${fmt(codes.length)})`;
          }
          text.value = '';
          file.value = '';
        } catch (error) {
          status.replaceChildren(problem(error));
        }
      },
    },
    text,
    h('label', {}, 'or a CSV file ', file),
    h('button', { type: 'submit', 'data-testid': 'load' }, 'Load'),
    progress,
    status,
  );
}

export function render(): void {
  if (!session.key) return signIn();
  const route = location.hash.replace(/^#/, '') || '/campaigns';
  const match = /^\/campaigns\/([0-9a-f-]{36})$/.exec(route);
  const endpoint = /^\/webhooks\/([0-9a-f-]{36})$/.exec(route);
  if (match) void campaign(match[1]!);
  else if (endpoint) void webhookDeliveries(endpoint[1]!);
  else if (route === '/webhooks') void webhooks();
  else if (route === '/new') newCampaign();
  else void campaigns();
}
