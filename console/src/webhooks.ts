// Webhook screens: the endpoints (the admin key sees every one), and one endpoint's deliveries with
// a status filter, paging and "Send again" (redeliverWebhook). Plain DOM through h(), no innerHTML.
import { gql } from './api';
import { screen } from './shell';
import { action, fmt, h, problem } from './ui';

interface Endpoint {
  id: string;
  url: string;
  events: string[];
  partner: { id: string; name: string } | null;
  enabled: boolean;
  createdAt: string;
}

interface Delivery {
  id: string;
  eventId: string;
  event: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

interface DeliveryPage {
  edges: { node: Delivery; cursor: string }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount: number;
}

const ENDPOINTS = '{ webhooks { id url events partner { id name } enabled createdAt } }';
const DELIVERY_FIELDS = 'id eventId event status attempts lastStatusCode lastError nextAttemptAt deliveredAt createdAt';
const DELIVERIES = `query($endpointId: ID!, $first: Int, $after: String, $status: DeliveryStatus) {
  webhookDeliveries(endpointId: $endpointId, first: $first, after: $after, status: $status) {
    edges { node { ${DELIVERY_FIELDS} } cursor }
    pageInfo { hasNextPage endCursor }
    totalCount
  }
}`;
const REDELIVER = `mutation($id: ID!) { redeliverWebhook(deliveryId: $id) { ${DELIVERY_FIELDS} } }`;
const PAGE_SIZE = 20;
const STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;

/** The browser's local time, with its zone; the exact instant (UTC) in the tooltip. */
function time(iso: string): HTMLElement {
  const date = new Date(iso);
  const text = date.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'short',
  });
  return h('time', { datetime: iso, title: date.toISOString() }, text);
}

const owner = (e: Endpoint) => (e.partner ? e.partner.name : 'operator (every partner)');

export async function webhooks(): Promise<void> {
  const body = h('tbody');
  const table = h(
    'table.webhooks',
    { 'data-testid': 'webhooks' },
    h('thead', {}, h('tr', {}, ...['URL', 'Events', 'Partner', 'Enabled', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
    body,
  );
  const status = h('div');
  screen(h('h1', {}, 'Webhooks'), status, h('div.scroll', {}, table));
  try {
    const data = await gql<{ webhooks: Endpoint[] }>(ENDPOINTS);
    if (data.webhooks.length === 0) {
      table.hidden = true;
      status.replaceChildren(h('p.empty', { 'data-testid': 'webhooks-empty' }, 'No webhook endpoints yet — create one with the createWebhook mutation (see README).'));
      return;
    }
    body.replaceChildren(
      ...data.webhooks.map((e) =>
        h(
          'tr',
          { 'data-testid': `webhook-${e.id}` },
          h('td.code', {}, h('a', { href: `#/webhooks/${e.id}` }, e.url)),
          h('td', {}, e.events.join(', ')),
          h('td', {}, owner(e)),
          h('td', {}, e.enabled ? 'yes' : 'no'),
          h('td', {}, time(e.createdAt)),
        ),
      ),
    );
  } catch (error) {
    table.hidden = true;
    status.replaceChildren(problem(error));
  }
}

export async function webhookDeliveries(endpointId: string): Promise<void> {
  const title = h('h1', {}, 'Webhook deliveries');
  const meta = h('p.meta', { 'data-testid': 'endpoint' });
  const filter = h(
    'select',
    { 'data-testid': 'status-filter', 'aria-label': 'Status', 'data-read': true },
    h('option', { value: '' }, 'All'),
    ...STATUSES.map((s) => h('option', { value: s }, s)),
  ) as HTMLSelectElement;
  const refresh = h('button', { type: 'button', 'data-testid': 'refresh', 'data-read': true }, 'Refresh');
  const count = h('span.meta', { 'data-testid': 'delivery-count' });
  const body = h('tbody');
  const table = h(
    'table.deliveries',
    { 'data-testid': 'deliveries' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Created', 'Event', 'Event id', 'Status', 'Attempts', 'Last HTTP status', 'Last error', 'Next attempt / delivered at', 'Action'].map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    body,
  );
  const empty = h('p.empty', { 'data-testid': 'deliveries-empty', hidden: true });
  const status = h('div');
  const more = h('button', { type: 'button', 'data-testid': 'more', hidden: true, 'data-read': true }, 'More') as HTMLButtonElement;
  screen(
    h('p', {}, h('a', { href: '#/webhooks' }, '← Webhooks')),
    title,
    meta,
    h('div.actions', {}, h('label', {}, 'Status ', filter), refresh, count),
    status,
    h('div.scroll', {}, table),
    empty,
    more,
  );

  const row = (d: Delivery): HTMLElement => {
    const tr = h(
      'tr',
      { 'data-testid': `delivery-${d.id}`, 'data-status': d.status },
      h('td', {}, time(d.createdAt)),
      h('td', {}, d.event),
      h('td.code', { title: d.eventId }, d.eventId.slice(0, 8)),
      h('td', {}, h(`span.status.${d.status.toLowerCase()}`, { 'data-testid': 'delivery-status' }, d.status)),
      h('td', { 'data-testid': 'attempts' }, String(d.attempts)),
      h('td', { 'data-testid': 'last-status-code' }, d.lastStatusCode === null ? '—' : String(d.lastStatusCode)),
      h('td', {}, d.lastError ?? '—'),
      h(
        'td',
        {},
        d.status === 'DELIVERED' && d.deliveredAt ? h('span', {}, 'delivered ', time(d.deliveredAt)) : d.status === 'PENDING' && d.nextAttemptAt ? h('span', {}, 'next ', time(d.nextAttemptAt)) : '—',
      ),
      h('td', {}, d.status === 'PENDING' ? '' : sendAgain(d)),
    );
    return tr;
  };

  const sendAgain = (d: Delivery): HTMLElement => {
    const button = action('Send again', { 'data-testid': `redeliver-${d.id}` });
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        const data = await gql<{ redeliverWebhook: Delivery }>(REDELIVER, { id: d.id });
        body.querySelector(`[data-testid="delivery-${d.id}"]`)?.replaceWith(row(data.redeliverWebhook));
      } catch (error) {
        button.replaceWith(problem(error));
      }
    });
    return button;
  };

  // Each (re)load bumps the generation: a page that arrives after the filter changed is dropped.
  let generation = 0;
  let cursor: string | null = null;
  const load = async (append: boolean) => {
    const mine = append ? generation : ++generation;
    more.disabled = true;
    try {
      const data = await gql<{ webhookDeliveries: DeliveryPage }>(DELIVERIES, {
        endpointId,
        first: PAGE_SIZE,
        after: append ? cursor : null,
        status: filter.value || null,
      });
      if (mine !== generation) return;
      const page = data.webhookDeliveries;
      cursor = page.pageInfo.endCursor;
      status.replaceChildren();
      const rows = page.edges.map(({ node }) => row(node));
      if (append) body.append(...rows);
      else body.replaceChildren(...rows);
      count.textContent = `${fmt(page.totalCount)} ${filter.value ? `${filter.value} ` : ''}deliver${page.totalCount === 1 ? 'y' : 'ies'}`;
      table.hidden = page.totalCount === 0;
      empty.hidden = page.totalCount !== 0;
      empty.textContent = filter.value ? `No ${filter.value} deliveries for this endpoint.` : 'No deliveries yet: nothing this endpoint subscribes to has happened since it was created.';
      more.hidden = !page.pageInfo.hasNextPage;
    } catch (error) {
      if (mine !== generation) return;
      if (!append) table.hidden = true;
      status.replaceChildren(problem(error));
    } finally {
      more.disabled = false;
    }
  };

  filter.addEventListener('change', () => void load(false));
  refresh.addEventListener('click', () => void load(false));
  more.addEventListener('click', () => void load(true));

  const endpoint = gql<{ webhooks: Endpoint[] }>(ENDPOINTS).then(
    (data) => {
      const e = data.webhooks.find((w) => w.id === endpointId);
      if (!e) return meta.replaceChildren('No such endpoint (or it was deleted).');
      meta.replaceChildren(
        h('span.code', {}, e.url),
        ` · ${owner(e)} · ${e.events.join(', ')} · ${e.enabled ? 'enabled' : 'disabled'} · created `,
        time(e.createdAt),
      );
    },
    (error: unknown) => meta.replaceChildren(problem(error)),
  );
  await Promise.all([endpoint, load(false)]);
}
