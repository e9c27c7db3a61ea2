// The console's frame: signing in (the key's role comes from `viewer`), the header with its
// navigation, role and live indicator, and the routes.
import { gql, onLiveness, session, signOut, type Liveness, type Role } from './api';
import { auditLog } from './audit';
import { campaigns } from './campaign/list';
import { newCampaign } from './campaign/newCampaign';
import { campaign } from './campaign/page';
import { operatorKeys } from './operators';
import { partner, partners } from './partners';
import { h, may, problem, READ_ONLY_REASON, type Child } from './ui';
import { webhookDeliveries, webhooks } from './webhooks';

let teardown: (() => void) | null = null;

/** Runs `stop` when the next screen replaces this one (timers, subscriptions). */
export function onLeave(stop: () => void): void {
  const previous = teardown;
  teardown = () => {
    previous?.();
    stop();
  };
}

const LIVE_TEXT: Record<Liveness, string> = { live: 'Live', connecting: 'Connecting…', offline: 'Offline' };

/** A dot and a word: whether the server answers (the last request, or the live socket). */
function liveIndicator(): HTMLElement {
  const text = h('span', {}, LIVE_TEXT.connecting);
  const el = h('span.live', { 'data-testid': 'live-indicator', role: 'status', 'aria-live': 'polite' }, h('span.dot', { 'aria-hidden': 'true' }), text);
  const stop = onLiveness((state) => {
    el.dataset.state = state;
    text.textContent = LIVE_TEXT[state];
  });
  onLeave(stop);
  return el;
}

export function screen(...children: Child[]): void {
  teardown?.();
  teardown = null;
  const root = document.getElementById('app')!;
  const role = session.role;
  const link = (href: string, label: string) => h('a', { href, ...(location.hash === href || location.hash.startsWith(`${href}/`) ? { 'aria-current': 'page' } : {}) }, label);
  root.replaceChildren(
    h(
      'header',
      {},
      h('a.brand', { href: '#/campaigns' }, 'Tessera'),
      h('nav', { 'aria-label': 'Console' },
        link('#/campaigns', 'Campaigns'),
        // Pages whose only purpose is a change are left out for a role that cannot make it.
        may() ? link('#/new', 'New campaign') : null,
        link('#/partners', 'Partners'),
        link('#/audit', 'Audit log'),
        link('#/webhooks', 'Webhooks'),
        may('owner') ? link('#/operators', 'Operator keys') : null,
        h('a', { href: '/graphql' }, 'GraphiQL'),
      ),
      liveIndicator(),
      h('button.test-switch', {
        type: 'button',
        'aria-pressed': String(session.testMode),
        'data-testid': 'test-mode',
        title: 'Test mode shows test campaigns and their figures; live mode shows live ones',
        onclick: () => {
          session.testMode = !session.testMode;
          // The campaigns list and every page of a campaign follow the switch.
          if (location.hash.startsWith('#/campaigns/')) location.hash = '#/campaigns';
          render();
        },
      }, session.testMode ? 'Test mode: on' : 'Test mode: off'),
      h('span.role', { 'data-testid': 'role', title: role === 'VIEWER' ? READ_ONLY_REASON : `Signed in with an ${role} key` }, role ?? ''),
      h('button.link', { type: 'button', onclick: () => (signOut(), (location.hash = '#/'), render()), 'data-testid': 'sign-out' }, 'Sign out'),
    ),
    h('main', {},
      session.testMode ? h('p.test-banner', { 'data-testid': 'test-mode-banner', role: 'note' }, 'Test mode — test campaigns and their figures only. Nothing here is live; the test keys of partners act on these.') : null,
      role === 'VIEWER' ? h('p.readonly-banner', { 'data-testid': 'read-only-banner' }, READ_ONLY_REASON) : null,
      ...children),
  );
  document.body.classList.toggle('test-mode', session.testMode);
  // Every 15 s a tiny request keeps the indicator honest on pages without a live socket.
  const heartbeat = setInterval(() => void gql('{ viewer { role } }').catch(() => undefined), 15_000);
  onLeave(() => clearInterval(heartbeat));
}

export function signIn(): void {
  const root = document.getElementById('app')!;
  const input = h('input', { id: 'key', type: 'password', autocomplete: 'off', 'data-testid': 'key' }) as HTMLInputElement;
  const status = h('div');
  const form = h(
    'form.signin',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        session.key = input.value.trim();
        try {
          const { viewer } = await gql<{ viewer: { role: Role | null; partner: { name: string } | null } }>('{ viewer { role partner { name } } }');
          if (!viewer.role) {
            session.key = null;
            status.replaceChildren(h('p.error', { role: 'alert' }, 'This is a partner key. The console needs an operator key: ADMIN_API_KEY, or one made with createOperatorKey.'));
            return;
          }
          session.role = viewer.role;
          location.hash = '#/campaigns';
          render();
        } catch (error) {
          session.key = null;
          status.replaceChildren(problem(error));
        }
      },
    },
    h('h1', {}, 'Tessera console'),
    h('p', {}, 'Sign in with an operator key — the admin key or an operator key. It is kept for this tab only.'),
    h('label', { for: 'key' }, 'Operator API key'),
    input,
    h('button', { type: 'submit', 'data-testid': 'sign-in' }, 'Sign in'),
    status,
  );
  root.replaceChildren(h('main', {}, form));
  input.focus();
}

export function render(): void {
  if (!session.key || !session.role) return signIn();
  const route = location.hash.replace(/^#/, '') || '/campaigns';
  const id = (prefix: string) => new RegExp(`^/${prefix}/([0-9a-f-]{36})$`).exec(route)?.[1];
  const campaignId = id('campaigns');
  const endpointId = id('webhooks');
  const partnerId = id('partners');
  if (campaignId) void campaign(campaignId);
  else if (endpointId) void webhookDeliveries(endpointId);
  else if (partnerId) void partner(partnerId);
  else if (route === '/webhooks') void webhooks();
  else if (route === '/partners') void partners();
  else if (route === '/operators') void operatorKeys();
  else if (route === '/audit') void auditLog();
  else if (route === '/new') newCampaign();
  else void campaigns();
}
