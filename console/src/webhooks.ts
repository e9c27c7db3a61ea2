// Webhook screens: the endpoints (the admin key sees every one) — create one (its signing secret
// shown once, with a copy button) or delete one (asked first) — and one endpoint's deliveries with a
// status filter, paging and "Send again" (redeliverWebhook). Plain DOM through h(), no innerHTML.
import { gql } from './api';
import { screen } from './shell';
import { action, ask, fmt, guardForm, h, may, problem, shownOnce, when } from './ui';

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

/** Every event an endpoint can subscribe to (schema.graphql's WebhookEvent), with what it means. */
const EVENTS: [string, string][] = [
  ['ALLOCATION_CREATED', 'a claim, or a confirmed hold'],
  ['ALLOCATION_RELEASED', 'an allocation released'],
  ['HOLD_CREATED', 'a hold'],
  ['HOLD_CONFIRMED', 'a hold confirmed'],
  ['HOLD_EXPIRED', 'a hold expired'],
  ['CAMPAIGN_OPENED', 'a campaign opened'],
  ['CAMPAIGN_CLOSED', 'a campaign closed'],
  ['CAMPAIGN_SOLD_OUT', 'a campaign sold out'],
  ['CAMPAIGN_LOW_STOCK', 'available fell to the low-stock threshold'],
  ['ALLOTMENT_LAPSED', 'an allotment lapsed'],
  ['WAITLIST_OFFERED', 'returned tickets offered to a waitlist entry'],
  ['BALLOT_DRAWN', 'a ballot drawn'],
];
const CREATE = 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { secret endpoint { id url partner { name } } } }';

const owner = (e: Endpoint) => (e.partner ? e.partner.name : 'operator (every partner)');

export async function webhooks(): Promise<void> {
  const body = h('tbody');
  const table = h(
    'table.webhooks',
    { 'data-testid': 'webhooks' },
    h('thead', {}, h('tr', {}, ...['URL', 'Events', 'Partner', 'Enabled', 'Created', may() ? 'Action' : ''].filter(Boolean).map((t) => h('th', { scope: 'col' }, t)))),
    body,
  );
  const status = h('div');
  const created = h('div');
  const form = createForm(created, () => load());
  screen(h('h1', {}, 'Webhooks'), form ? h('section', {}, h('h2', {}, 'New endpoint'), form, created) : created, h('h2', {}, 'Endpoints'), status, h('div.scroll', {}, table));

  const remove = async (e: Endpoint) => {
    if (!(await ask(`Delete the endpoint ${e.url} (${owner(e)})? Nothing more is sent to it, and its pending deliveries become FAILED. It cannot be undone.`, 'Delete', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { deleteWebhook(id: $id) }', { id: e.id });
      created.replaceChildren(h('p', { role: 'status', 'data-testid': 'webhook-deleted' }, `The endpoint ${e.url} was deleted.`));
      await load();
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };

  const load = async () => {
    try {
      const data = await gql<{ webhooks: Endpoint[] }>(ENDPOINTS);
      table.hidden = data.webhooks.length === 0;
      if (data.webhooks.length === 0) {
        status.replaceChildren(h('p.empty', { 'data-testid': 'webhooks-empty' }, may() ? 'No webhook endpoints yet — create one above: its signing secret is shown once.' : 'No webhook endpoints yet.'));
        body.replaceChildren();
        return;
      }
      status.replaceChildren();
      body.replaceChildren(
        ...data.webhooks.map((e) =>
          h(
            'tr',
            { 'data-testid': `webhook-${e.id}` },
            h('td.code.url', {}, h('a', { href: `#/webhooks/${e.id}` }, e.url)),
            h('td.events', {}, e.events.join(', ')),
            h('td', {}, owner(e)),
            h('td', {}, e.enabled ? 'yes' : 'no'),
            h('td', {}, when(e.createdAt)),
            may() ? h('td', {}, action('Delete', { class: 'danger', 'data-testid': `delete-${e.id}`, 'aria-label': `Delete the endpoint ${e.url}`, onclick: () => void remove(e) })) : null,
          ),
        ),
      );
    } catch (error) {
      table.hidden = true;
      status.replaceChildren(problem(error));
    }
  };
  await load();
}

/** The new-endpoint form: URL, events, and whose endpoint it is (a partner's, or the operator's). */
function createForm(created: HTMLElement, changed: () => Promise<void>): HTMLElement | null {
  if (!may()) return null;
  const url = h('input', { id: 'w-url', type: 'url', required: true, maxlength: '2048', placeholder: 'https://example.com/tessera', 'data-testid': 'webhook-url' }) as HTMLInputElement;
  const partner = h('select', { id: 'w-partner', 'data-testid': 'webhook-partner' }, h('option', { value: '' }, 'Operator endpoint (every event)')) as HTMLSelectElement;
  const boxes = EVENTS.map(([event, meaning]) => {
    const box = h('input', { id: `w-${event}`, type: 'checkbox', value: event, 'data-testid': `webhook-event-${event}` }) as HTMLInputElement;
    return { box, label: h('label.check', { for: `w-${event}` }, box, h('span', {}, h('span.code', {}, event), ` — ${meaning}`)) };
  });
  const status = h('div', { role: 'status' });
  void gql<{ partners: { edges: { node: { id: string; name: string; revokedAt: string | null } }[] } }>('{ partners(first: 100) { edges { node { id name revokedAt } } } }').then(
    (data) => partner.append(...data.partners.edges.map(({ node: p }) => h('option', { value: p.id }, `${p.name}'s endpoint${p.revokedAt ? ' (key revoked: no events)' : ''}`))),
    (error: unknown) => status.replaceChildren(problem(error)),
  );
  const form = h(
    'form.stack',
    {
      'data-testid': 'webhook-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const events = boxes.filter((b) => b.box.checked).map((b) => b.box.value);
        if (events.length === 0) {
          status.replaceChildren(h('p.error', { role: 'alert' }, 'Choose at least one event.'));
          return;
        }
        try {
          const data = await gql<{ createWebhook: { secret: string; endpoint: { id: string; url: string; partner: { name: string } | null } } }>(CREATE, {
            input: { url: url.value.trim(), events, partnerId: partner.value || null },
          });
          const made = data.createWebhook;
          status.replaceChildren();
          created.replaceChildren(
            shownOnce(
              made.secret,
              `The endpoint ${made.endpoint.url} was created with this signing secret`,
              'Copy it now into the receiver (it checks each delivery’s Tessera-Signature with it): it is shown once and never again (it is stored encrypted).',
              'Copy secret',
              'webhook-secret',
            ),
          );
          url.value = '';
          for (const b of boxes) b.box.checked = false;
          await changed();
        } catch (error) {
          status.replaceChildren(problem(error));
        }
      },
    },
    h('label', { for: 'w-url' }, 'URL (https; http only to 127.0.0.1, localhost or [::1] outside production)'),
    url,
    h('label', { for: 'w-partner' }, 'Whose endpoint'),
    partner,
    h('fieldset', {}, h('legend', {}, 'Events (at least one)'), h('div.checks.events', {}, ...boxes.map((b) => b.label))),
    h('div.actions', {}, h('button', { type: 'submit', 'data-testid': 'create-webhook' }, 'Create endpoint')),
    status,
  );
  return guardForm(form);
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
        ...['Created', 'Event', 'Event id', 'Status', 'Attempts', 'Last HTTP status', 'Last error', 'Next attempt / delivered at', may() ? 'Action' : ''].filter(Boolean).map((t) => h('th', { scope: 'col' }, t)),
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
      h('td', {}, when(d.createdAt)),
      h('td', {}, d.event),
      h('td.code', { title: d.eventId }, d.eventId.slice(0, 8)),
      h('td', {}, h(`span.status.${d.status.toLowerCase()}`, { 'data-testid': 'delivery-status' }, d.status)),
      h('td', { 'data-testid': 'attempts' }, String(d.attempts)),
      h('td', { 'data-testid': 'last-status-code' }, d.lastStatusCode === null ? '—' : String(d.lastStatusCode)),
      h('td.error-text', {}, d.lastError ?? '—'),
      h(
        'td',
        {},
        d.status === 'DELIVERED' && d.deliveredAt ? h('span', {}, 'delivered ', when(d.deliveredAt)) : d.status === 'PENDING' && d.nextAttemptAt ? h('span', {}, 'next ', when(d.nextAttemptAt)) : '—',
      ),
      may() ? h('td', {}, d.status === 'PENDING' ? '' : sendAgain(d)) : null,
    );
    return tr;
  };

  const sendAgain = (d: Delivery): HTMLElement | string => {
    const button = action('Send again', { 'data-testid': `redeliver-${d.id}` });
    if (!button) return '';
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
        when(e.createdAt),
      );
    },
    (error: unknown) => meta.replaceChildren(problem(error)),
  );
  await Promise.all([endpoint, load(false)]);
}
