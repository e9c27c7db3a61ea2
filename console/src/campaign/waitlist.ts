// A campaign's waitlist (WAITLIST_FIRST): how many wait and how many offers are out, then the
// entries a page at a time, in a chosen view — offers out, then who waits (the default); one
// status; or every entry in join order. A ballot has no waitlist (its returned tickets pass on to
// its ranking), so the section is hidden for one.
import { gql } from '../api';
import { fmt, h, pager, problem, rowsOr, table, when, type Connection } from '../ui';
import type { CampaignDetail } from './model';

interface WaitlistRow {
  holder: string;
  quantity: number;
  status: string;
  position: number | null;
  createdAt: string;
  offer: { expiresAt: string | null; status: string }[];
}

const PAGE_SIZE = 20;
const FIELDS = 'holder quantity status position createdAt offer { expiresAt status }';

/** The views: offers out, then who waits (the default); one status; or every entry in join order. */
const VIEWS: Record<string, { label: string; statuses: (string | null)[] }> = {
  LIVE: { label: 'Offered, then waiting', statuses: ['OFFERED', 'WAITING'] },
  WAITING: { label: 'Waiting', statuses: ['WAITING'] },
  OFFERED: { label: 'Offered', statuses: ['OFFERED'] },
  ACCEPTED: { label: 'Accepted', statuses: ['ACCEPTED'] },
  EXPIRED: { label: 'Expired', statuses: ['EXPIRED'] },
  LEFT: { label: 'Left', statuses: ['LEFT'] },
  ALL: { label: 'Every entry, in join order', statuses: [null] },
};

/** One request for a page of a view: each status's connection under its own alias. */
const viewQuery = (statuses: (string | null)[]) => `query($id: ID!, ${statuses.map((_, k) => `$f${k}: Int, $a${k}: String`).join(', ')}) {
  campaign(id: $id) {
    ${statuses.map((status, k) => `s${k}: waitlist(first: $f${k}, after: $a${k}${status ? `, status: ${status}` : ''}) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${FIELDS} } } }`).join('\n    ')}
  }
}`;

const entryRow = (e: WaitlistRow) =>
  h('tr', {},
    h('td', {}, e.position === null ? '—' : String(e.position)),
    h('td', {}, e.holder),
    h('td', {}, fmt(e.quantity)),
    h('td', {}, h(`span.entry.${e.status.toLowerCase()}`, {}, e.status)),
    h('td', {}, when(e.createdAt)),
    h('td', {}, e.status === 'OFFERED' && e.offer[0] ? h('span', {}, 'offered until ', when(e.offer[0].expiresAt)) : e.offer.length ? `${fmt(e.offer.length)} offered` : '—'),
  );

export function waitlistPanel(id: string) {
  const summary = h('p', { 'data-testid': 'waitlist-summary' });
  const body = h('tbody', { 'data-testid': 'waitlist' });
  const view = h('select', { id: 'w-view', 'data-read': true, 'data-testid': 'waitlist-view' },
    ...Object.entries(VIEWS).map(([value, v]) => h('option', { value }, v.label)),
  ) as HTMLSelectElement;
  const status = h('div');
  // A view's statuses are walked in order (offers out, then who waits), so a page may end one
  // status's entries and begin the next one's. A page's cursor is where it starts: { k, after }.
  const entries = pager({
    size: PAGE_SIZE,
    testid: 'waitlist',
    fetch: async (start, size) => {
      const statuses = VIEWS[view.value]!.statuses;
      const from = start ? (JSON.parse(start) as { k: number; after: string | null }) : { k: 0, after: null };
      const variables: Record<string, unknown> = { id };
      statuses.forEach((_, k) => {
        variables[`f${k}`] = k < from.k ? 0 : size;
        variables[`a${k}`] = k === from.k ? from.after : null;
      });
      const data = await gql<{ campaign: Record<string, Connection<WaitlistRow>> }>(viewQuery(statuses), variables);
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
    show: (page) => body.replaceChildren(...rowsOr(page.rows, 6, view.value === 'LIVE' ? 'Nobody is waiting.' : 'No entries in this view.')),
  });
  view.addEventListener('change', () => void entries.reset().catch((error: unknown) => status.replaceChildren(problem(error))));
  const listing = h('div', {},
    h('div.inline', {}, h('label', { for: 'w-view' }, 'Show'), view),
    table(['Position', 'Holder', 'Tickets', 'Status', 'Joined', 'Offer'], body),
    entries.element,
    status,
  );
  const element = h('section', { 'data-testid': 'waitlist-section' }, h('h2', {}, 'Waitlist'), summary, listing);

  /** The summary, and the current page read again (nothing to read for a campaign without a waitlist). */
  const show = async (c: CampaignDetail) => {
    element.hidden = c.mode === 'BALLOT';
    const hasWaitlist = c.releasePolicy === 'WAITLIST_FIRST';
    summary.textContent = hasWaitlist
      ? `${fmt(c.waitlistLength)} waiting · ${fmt(c.offers.totalCount)} offers out, each held ${fmt(c.waitlistOfferSeconds)} s`
      : 'No waitlist: released tickets do not go to a waitlist under this release policy.';
    listing.hidden = !hasWaitlist;
    if (!hasWaitlist || c.mode === 'BALLOT') return;
    await entries.refresh().then(
      () => status.replaceChildren(),
      (error: unknown) => status.replaceChildren(problem(error)),
    );
  };
  return { element, show };
}
