// A campaign's page, put together from its panels (one file each in this folder): the overview and
// actions at the top, then the live figures, the ballot, the claims chart (timeline.ts), partners
// and latest allocations, the allocations search and export, allotments, the waitlist, and loading
// tickets — in an order that follows the campaign's stage. It reads the campaign once (model.ts)
// and hands it to every panel; the campaignStats subscription moves the live figures at once and
// the rest at most once a second, and a 5 s poll catches what moves no figure (entries, refusals).
import { subscription } from '../api';
import { onLeave, screen } from '../shell';
import { timelineChart } from '../timeline';
import { h, present, problem } from '../ui';
import { actionsPanel } from './actions';
import { allocationsPanel } from './allocations';
import { allotmentsPanel } from './allotments';
import { ballotPanel } from './ballot';
import { latestPanel } from './latest';
import { livePanel } from './live';
import { loadTicketsPanel } from './loadTickets';
import { readCampaign, STATS, type CampaignDetail, type CampaignPage, type Stats } from './model';
import { overviewPanel } from './overview';
import { partnersPanel } from './partners';
import { waitlistPanel } from './waitlist';

/** The page's sections in the order the campaign's stage calls for. */
function sections(c: CampaignDetail, s: Record<'live' | 'ballot' | 'chart' | 'columns' | 'search' | 'allotments' | 'waitlist', HTMLElement> & { load: HTMLElement | null }): (HTMLElement | null)[] {
  const drawn = c.mode === 'BALLOT' && Boolean(c.ballot?.drawnAt);
  // Loading tickets is for a campaign still to give them: not a CLOSED one, nor a drawn ballot.
  const load = c.status === 'CLOSED' || drawn ? null : s.load;
  // A DRAFT campaign is set up first: loading tickets leads, the (empty) figures follow.
  if (c.status === 'DRAFT') return [load, s.live, s.ballot, s.chart, s.columns, s.search, s.allotments, s.waitlist];
  // After the draw: the ranking and the winners' holds lead; no claims chart (a ballot takes no
  // claims) and no loading.
  if (drawn) return [s.ballot, s.live, s.columns, s.search, s.allotments];
  return [s.live, s.ballot, s.chart, s.columns, s.search, s.allotments, s.waitlist, load];
}

/**
 * Follows a campaign: the campaignStats subscription moves the live figures at once and wakes the
 * rest of the page (`wake`) at most once a second. Entries move no ticket figures, so campaignStats
 * does not wake the page for them, and refusals move none either: `wake` runs every 5 s as well.
 * Returns the stop.
 */
function follow(id: string, live: ReturnType<typeof livePanel>, wake: () => Promise<void>): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const poll = setInterval(() => void wake(), 5000);
  const unsubscribe = subscription().subscribe<{ campaignStats: Stats }>(
    { query: `subscription($id: ID!) { campaignStats(id: $id) { ${STATS} } }`, variables: { id } },
    {
      next: ({ data }) => {
        if (!data) return;
        live.show(data.campaignStats);
        timer ??= setTimeout(() => {
          timer = null;
          void wake();
        }, 1000);
      },
      error: (error) => live.failed(error),
      complete: () => undefined,
    },
  );
  return () => {
    unsubscribe();
    clearInterval(poll);
    if (timer) clearTimeout(timer);
  };
}

export async function campaign(id: string): Promise<void> {
  const actionStatus = h('div');
  const page: CampaignPage = {
    id,
    refresh: () => showDetail(),
    say: (...children) => actionStatus.replaceChildren(...present(...children)),
  };
  const overview = overviewPanel(id);
  const actions = actionsPanel(page);
  const live = livePanel();
  const chart = timelineChart();
  const partners = partnersPanel();
  const latest = latestPanel(page);
  const allotments = allotmentsPanel();
  const waitlist = waitlistPanel(id);
  const ballot = ballotPanel(id);
  const loadSection = loadTicketsPanel(id);
  const search = allocationsPanel(id, () => void showDetail());
  const columns = h('section.columns', {}, partners.element, latest.element);
  const body = h('div');
  screen(h('p', {}, h('a', { href: '#/campaigns' }, '← Campaigns')), overview.title, overview.idLine, overview.meta, actions.buttons, actionStatus, actions.slot, body);

  let placed: string | null = null;
  const place = (c: CampaignDetail) => {
    const stage = `${c.status} ${c.mode === 'BALLOT' && Boolean(c.ballot?.drawnAt)}`;
    if (stage === placed) return;
    placed = stage;
    body.replaceChildren(...present(...sections(c, { load: loadSection, live: live.element, ballot: ballot.element, chart: chart.section, columns, search, allotments: allotments.element, waitlist: waitlist.element })));
  };

  const showDetail = async () => {
    const c = await readCampaign(id);
    if (!c) {
      overview.missing();
      body.replaceChildren(h('p.empty', {}, 'There is no campaign with this id. ', h('a', { href: '#/campaigns' }, 'Back to the campaigns.')));
      return;
    }
    overview.show(c);
    place(c);
    actions.show(c);
    partners.show(c);
    allotments.show(c);
    latest.show(c);
    chart.draw(c);
    // The waitlist's and the ballot's current pages, read again.
    await Promise.all([waitlist.show(c), ballot.show(c)]);
  };

  try {
    await showDetail();
  } catch (error) {
    overview.title.replaceWith(problem(error));
    return;
  }
  onLeave(follow(id, live, () => showDetail().catch(() => undefined)));
}
