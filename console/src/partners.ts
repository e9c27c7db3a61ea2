// Partners: the list, a new partner (its key shown once, with a copy button), and one partner's
// page — rotate or revoke its key, its rate limit, the campaigns its key is scoped to, and its
// quotas and allotments per campaign.
import { gql } from './api';
import { screen } from './shell';
import { action, ask, copyable, fmt, fromLocalInput, guardForm, h, may, present, problem, rowsOr, table, when, ZONE } from './ui';

interface Partner {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  rateLimit: number | null;
  campaignScope: string[] | null;
  /** Its test key (issue 31), by its public prefix; null for a partner made before test keys. */
  testKey: { prefix: string; createdAt: string; lastUsedAt: string | null; revokedAt: string | null } | null;
}

const PARTNER_FIELDS = 'id name createdAt lastUsedAt revokedAt rateLimit campaignScope testKey { prefix createdAt lastUsedAt revokedAt }';

/** The key, once: a box the operator must copy from now, because it is never shown again. */
function keyOnce(apiKey: string, what: string, testid = 'api-key'): HTMLElement {
  return h('div.key-once', { role: 'status', 'data-testid': testid === 'api-key' ? 'key-once' : `${testid}-once` },
    h('p', {}, h('strong', {}, `${what}. `), 'Copy it now: it is shown once and never again (only its hash is kept).'),
    copyable(apiKey, testid, 'Copy key'),
  );
}

const keyState = (p: Partner) => (p.revokedAt ? h('span.status.closed', {}, 'revoked') : h('span.status.open', {}, 'active'));
const scopeText = (p: Partner) => (p.campaignScope === null ? 'every campaign' : p.campaignScope.length === 0 ? 'no campaign' : `${fmt(p.campaignScope.length)} campaign${p.campaignScope.length === 1 ? '' : 's'}`);

export async function partners(): Promise<void> {
  const body = h('tbody', { 'data-testid': 'partners' });
  const status = h('div');
  const created = h('div');
  const name = h('input', { id: 'p-name', required: true, maxlength: '200', 'data-testid': 'partner-name' }) as HTMLInputElement;
  const form = guardForm(
    h('form.inline', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const data = await gql<{ createPartner: { apiKey: string; testApiKey: string; partner: Partner } }>(`mutation($name: String!) { createPartner(input: { name: $name }) { apiKey testApiKey partner { ${PARTNER_FIELDS} } } }`, { name: name.value });
          created.replaceChildren(
            keyOnce(data.createPartner.apiKey, `${data.createPartner.partner.name} was created with this key`),
            keyOnce(data.createPartner.testApiKey, 'And this test key, which sees test campaigns only', 'test-api-key'),
          );
          name.value = '';
          await load();
        } catch (error) {
          created.replaceChildren(problem(error));
        }
      },
    },
    h('label', { for: 'p-name' }, 'New partner'), name,
    h('button', { type: 'submit', 'data-testid': 'create-partner' }, 'Create partner')),
  );
  screen(h('h1', {}, 'Partners'), form, created, status, table(['Name', 'Key', 'Last used', 'Created', 'Rate limit', 'Campaigns'], body));
  const load = async () => {
    try {
      const data = await gql<{ partners: { edges: { node: Partner }[] } }>(`{ partners(first: 100) { edges { node { ${PARTNER_FIELDS} } } } }`);
      status.replaceChildren();
      body.replaceChildren(
        ...rowsOr(
          data.partners.edges.map(({ node: p }) =>
            h('tr', { 'data-testid': `partner-${p.id}` },
              h('td', {}, h('a', { href: `#/partners/${p.id}` }, p.name)),
              h('td', {}, keyState(p)),
              h('td', {}, when(p.lastUsedAt, 'never')),
              h('td', {}, when(p.createdAt)),
              h('td', {}, p.rateLimit === null ? 'server default' : `${fmt(p.rateLimit)} points/s`),
              h('td', {}, scopeText(p)),
            ),
          ),
          6,
          may() ? 'No partners yet. Create one above: its key is shown once.' : 'No partners yet.',
        ),
      );
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };
  await load();
}

interface CampaignTerms {
  id: string;
  name: string;
  status: string;
  partnerStats: { partner: { id: string }; allocated: number; held: number; quota: number | null }[];
  allotments: { partner: { id: string }; size: number; used: number; remaining: number; lapsesAt: string | null; lapsedAt: string | null }[];
}

export async function partner(id: string): Promise<void> {
  const title = h('h1', {}, '…');
  const meta = h('p.meta');
  const keyActions = h('div.actions');
  const keyStatus = h('div');
  const testKeyActions = h('div.actions');
  const testKeyStatus = h('div');
  const rateSlot = h('div');
  const scopeSlot = h('div');
  const scopeStatus = h('p', { role: 'status', 'data-testid': 'scope-status' });
  const termsBody = h('tbody', { 'data-testid': 'terms' });
  const termsSlot = h('div');
  screen(
    h('p', {}, h('a', { href: '#/partners' }, '← Partners')),
    title,
    meta,
    h('section', {}, h('h2', {}, 'API key'), keyActions, keyStatus),
    h('section', { 'data-testid': 'test-key' }, h('h2', {}, 'Test key'), h('p.meta', {}, 'The partner in test mode: it sees and acts on test campaigns only, as the live key does on live ones.'), testKeyActions, testKeyStatus),
    h('section', {}, h('h2', {}, 'Rate limit'), rateSlot),
    h('section', {}, h('h2', {}, 'Campaigns its key can use'), scopeSlot, scopeStatus),
    h('section', {}, h('h2', {}, 'Quotas and allotments'), table(['Campaign', 'Status', 'Allocated', 'Held', 'Quota', 'Allotment', 'Allotment lapses'], termsBody), termsSlot),
  );

  const show = async () => {
    const data = await gql<{ partners: { edges: { node: Partner }[] }; campaigns: { edges: { node: CampaignTerms }[] } }>(
      `{ partners(first: 100) { edges { node { ${PARTNER_FIELDS} } } }
         campaigns(first: 100) { edges { node { id name status partnerStats { partner { id } allocated held quota } allotments { partner { id } size used remaining lapsesAt lapsedAt } } } } }`,
    );
    const p = data.partners.edges.map((e) => e.node).find((n) => n.id === id);
    if (!p) {
      title.textContent = 'No such partner';
      return;
    }
    const all = data.campaigns.edges.map((e) => e.node);
    title.textContent = p.name;
    meta.replaceChildren('Partner id ', copyable(p.id, 'partner-id', 'Copy id'), ' · created ', when(p.createdAt), ' · last used ', when(p.lastUsedAt, 'never'));
    keyActions.replaceChildren(
      ...present(
      keyState(p),
      action('Rotate key', { class: 'secondary', 'data-testid': 'rotate', onclick: () => void rotate(p) }),
      p.revokedAt ? '' : action('Revoke key', { class: 'danger', 'data-testid': 'revoke', onclick: () => void revoke(p) }),
      ),
    );
    const t = p.testKey;
    testKeyActions.replaceChildren(
      ...present(
      t ? h('span', { 'data-testid': 'test-key-prefix' }, h('code', {}, `${t.prefix}_…`), ' ', t.revokedAt ? h('span.status.closed', {}, 'revoked') : h('span.status.open', {}, 'active'), ' · last used ', when(t.lastUsedAt, 'never')) : h('span', {}, 'No test key yet.'),
      action(t ? 'Rotate test key' : 'Issue test key', { class: 'secondary', 'data-testid': 'rotate-test', onclick: () => void rotateTest(p) }),
      t && !t.revokedAt ? action('Revoke test key', { class: 'danger', 'data-testid': 'revoke-test', onclick: () => void revokeTest(p) }) : '',
      ),
    );
    rateSlot.replaceChildren(rateForm(p));
    scopeSlot.replaceChildren(scopeForm(p, all));
    const rows = all
      .map((c) => ({ c, stats: c.partnerStats.find((s) => s.partner.id === id), allotment: c.allotments.find((a) => a.partner.id === id) }))
      .filter(({ stats, allotment }) => stats || allotment)
      .map(({ c, stats, allotment }) =>
        h('tr', {},
          h('td', {}, h('a', { href: `#/campaigns/${c.id}` }, c.name)),
          h('td', {}, c.status),
          h('td', {}, fmt(stats?.allocated ?? 0)),
          h('td', {}, fmt(stats?.held ?? 0)),
          h('td', {}, stats?.quota === null || stats?.quota === undefined ? 'none' : fmt(stats.quota)),
          h('td', {}, allotment ? `${fmt(allotment.size)} (${fmt(allotment.remaining)} left)` : 'none'),
          h('td', {}, allotment ? (allotment.lapsedAt ? h('span', {}, 'lapsed ', when(allotment.lapsedAt)) : when(allotment.lapsesAt, 'when the campaign ends')) : '—'),
        ),
      );
    termsBody.replaceChildren(...rowsOr(rows, 7, 'No allocations, quota or allotment in any campaign yet.'));
    termsSlot.replaceChildren(...present(termsForm(p, all)));
  };

  const rotate = async (p: Partner) => {
    if (!(await ask(`Give ${p.name} a new key? The current one stops working at once.`, 'Rotate key'))) return;
    try {
      const data = await gql<{ rotateApiKey: { apiKey: string } }>('mutation($id: ID!) { rotateApiKey(partnerId: $id) { apiKey } }', { id: p.id });
      keyStatus.replaceChildren(keyOnce(data.rotateApiKey.apiKey, `${p.name}'s new key`));
      await show();
    } catch (error) {
      keyStatus.replaceChildren(problem(error));
    }
  };

  const revoke = async (p: Partner) => {
    if (!(await ask(`Revoke ${p.name}'s key? Every request with it fails from now on (rotating gives a new one).`, 'Revoke key', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { revokeApiKey(partnerId: $id) { partner { id } } }', { id: p.id });
      keyStatus.replaceChildren(h('p', { role: 'status' }, 'The key is revoked.'));
      await show();
    } catch (error) {
      keyStatus.replaceChildren(problem(error));
    }
  };

  const rotateTest = async (p: Partner) => {
    if (p.testKey && !(await ask(`Give ${p.name} a new test key? The current one stops working at once.`, 'Rotate test key'))) return;
    try {
      const data = await gql<{ rotateApiKey: { apiKey: string } }>('mutation($id: ID!) { rotateApiKey(partnerId: $id, test: true) { apiKey } }', { id: p.id });
      testKeyStatus.replaceChildren(keyOnce(data.rotateApiKey.apiKey, `${p.name}'s new test key`, 'test-api-key'));
      await show();
    } catch (error) {
      testKeyStatus.replaceChildren(problem(error));
    }
  };

  const revokeTest = async (p: Partner) => {
    if (!(await ask(`Revoke ${p.name}'s test key? The live key keeps working.`, 'Revoke test key', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { revokeApiKey(partnerId: $id, test: true) { partner { id } } }', { id: p.id });
      testKeyStatus.replaceChildren(h('p', { role: 'status' }, 'The test key is revoked.'));
      await show();
    } catch (error) {
      testKeyStatus.replaceChildren(problem(error));
    }
  };

  const rateForm = (p: Partner): HTMLElement => {
    const current = p.rateLimit === null ? 'the server default' : `${fmt(p.rateLimit)} points per second`;
    if (!may()) return h('p', { 'data-testid': 'rate-limit-text' }, `Its key may spend ${current} (a claim costs 5, a read 1).`);
    const points = h('input', { id: 'r-points', type: 'number', min: '1', max: '1000000', placeholder: 'server default', value: p.rateLimit === null ? '' : String(p.rateLimit), 'data-testid': 'rate-limit' }) as HTMLInputElement;
    const status = h('span', { role: 'status' });
    return h('form.inline', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          await gql('mutation($id: ID!, $n: Int) { setPartnerRateLimit(partnerId: $id, pointsPerSecond: $n) { partner { id } } }', { id: p.id, n: points.value ? Number(points.value) : null });
          status.textContent = 'Saved.';
        } catch (error) {
          status.replaceChildren(problem(error));
        }
      },
    }, h('label', { for: 'r-points' }, 'Points per second (a claim costs 5, a read 1; empty: the server default)'), points, h('button', { type: 'submit', 'data-testid': 'save-rate-limit' }, 'Save'), status);
  };

  const scopeForm = (p: Partner, all: CampaignTerms[]): HTMLElement => {
    if (!may()) {
      const names = all.filter((c) => p.campaignScope?.includes(c.id)).map((c) => c.name);
      return h('p', { 'data-testid': 'scope-text' }, p.campaignScope === null ? 'Every campaign, including future ones.' : names.length ? `Only: ${names.join(', ')}.` : 'No campaign: outside its scope the key is answered as if a campaign did not exist.');
    }
    const every = h('input', { id: 's-every', type: 'checkbox', 'data-testid': 'scope-every', ...(p.campaignScope === null ? { checked: true } : {}) }) as HTMLInputElement;
    const boxes = all.map((c) => {
      const box = h('input', { id: `s-${c.id}`, type: 'checkbox', value: c.id, ...(p.campaignScope?.includes(c.id) ? { checked: true } : {}) }) as HTMLInputElement;
      return { box, label: h('label.check', { for: `s-${c.id}` }, box, ` ${c.name}`) };
    });
    const list = h('div.checks', { 'data-testid': 'scope-campaigns' }, ...(boxes.length ? boxes.map((b) => b.label) : [h('p.empty', {}, 'No campaigns yet.')]));
    const sync = () => boxes.forEach((b) => (b.box.disabled = every.checked));
    every.addEventListener('change', sync);
    sync();
    return h('form.stack', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const ids = every.checked ? null : boxes.filter((b) => b.box.checked).map((b) => b.box.value);
        try {
          await gql('mutation($id: ID!, $ids: [ID!]) { scopePartnerKey(partnerId: $id, campaignIds: $ids) { id } }', { id: p.id, ids });
          await show();
          scopeStatus.textContent = `Saved: the key can use ${ids === null ? 'every campaign' : ids.length === 0 ? 'no campaign' : `${ids.length} campaign${ids.length === 1 ? '' : 's'}`}.`;
        } catch (error) {
          scopeStatus.replaceChildren(problem(error));
        }
      },
    },
    h('p.meta', {}, 'Outside these campaigns the key is answered as if they did not exist. New campaigns are included only with "every campaign".'),
    h('label.check', { for: 's-every' }, every, ' Every campaign, including future ones'),
    list,
    h('div.actions', {}, h('button', { type: 'submit', 'data-testid': 'save-scope' }, 'Save')));
  };

  const termsForm = (p: Partner, all: CampaignTerms[]) => {
    const open = all.filter((c) => c.status !== 'CLOSED');
    const campaignSelect = h('select', { id: 't-campaign', 'data-testid': 'terms-campaign' }, ...open.map((c) => h('option', { value: c.id }, c.name))) as HTMLSelectElement;
    const quota = h('input', { id: 't-quota', type: 'number', min: '0', placeholder: 'no quota', 'data-testid': 'quota' }) as HTMLInputElement;
    const size = h('input', { id: 't-size', type: 'number', min: '0', placeholder: '0 removes it', 'data-testid': 'allotment-size' }) as HTMLInputElement;
    const lapses = h('input', { id: 't-lapses', type: 'datetime-local', 'data-testid': 'allotment-lapses' }) as HTMLInputElement;
    const status = h('div', { role: 'status' });
    const run = async (what: 'quota' | 'allotment') => {
      try {
        if (what === 'quota') {
          await gql('mutation($c: ID!, $p: ID!, $q: Int) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: $q) { campaign { id } } }', { c: campaignSelect.value, p: p.id, q: quota.value ? Number(quota.value) : null });
        } else {
          await gql('mutation($c: ID!, $p: ID!, $s: Int!, $l: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: $s, lapsesAt: $l) { id } }', { c: campaignSelect.value, p: p.id, s: Number(size.value || 0), l: fromLocalInput(lapses.value) });
        }
        status.replaceChildren(h('p', {}, 'Saved.'));
        await show();
      } catch (error) {
        status.replaceChildren(problem(error));
      }
    };
    if (open.length === 0) return h('p.empty', {}, 'No open or draft campaign to set terms in.');
    return guardForm(h('form.stack.panel', { onsubmit: (e: Event) => e.preventDefault(), 'aria-label': `Quota and allotment of ${p.name}` },
      h('label', { for: 't-campaign' }, 'Campaign'), campaignSelect,
      h('label', { for: 't-quota' }, 'Quota: most live allocations (empty: none)'), quota,
      h('div.actions', {}, h('button', { type: 'button', 'data-testid': 'save-quota', onclick: () => void run('quota') }, 'Set quota')),
      h('label', { for: 't-size' }, 'Allotment: tickets set aside (0 removes it)'), size,
      h('label', { for: 't-lapses' }, `Allotment lapses at, ${ZONE} (empty: when the campaign ends)`), lapses,
      h('div.actions', {}, h('button', { type: 'button', 'data-testid': 'save-allotment', onclick: () => void run('allotment') }, 'Set allotment')),
      status));
  };

  try {
    await show();
  } catch (error) {
    title.replaceWith(problem(error));
  }
}
