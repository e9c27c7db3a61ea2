// The audit log: every admin mutation, webhook change and refused call, newest first, filtered by
// operation, outcome, actor and time, a page at a time; the campaigns an entry acted on by name
// (read for the whole page at once), each linked, with its id beside it.
import { gql } from './api';
import { campaignIds, readCampaignNames, type CampaignName } from './campaignNames';
import { screen } from './shell';
import { fmt, fromLocalInput, h, problem, rowsOr, table, when, ZONE } from './ui';

interface Entry {
  id: string;
  at: string;
  actor: string;
  operation: string;
  arguments: unknown;
  outcome: string;
  operator: { name: string; role: string } | null;
  partner: { name: string } | null;
}

const QUERY = `query($after: String, $operation: String, $outcome: String, $actor: String, $since: DateTime, $until: DateTime) {
  auditLog(first: 50, after: $after, operation: $operation, outcome: $outcome, actor: $actor, since: $since, until: $until) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { id at actor operation arguments outcome operator { name role } partner { name } } }
  }
}`;

/** Arguments shorter than this show whole; longer ones (up to 4 KB) open from a one-line start. */
const SHORT_ARGUMENTS = 160;

/** An entry's arguments as JSON, every character of it reachable: whole when short, else a summary that opens. */
function argumentsCell(args: unknown): HTMLElement {
  const text = JSON.stringify(args) ?? 'null';
  if (text.length <= SHORT_ARGUMENTS) return h('code.args-text', { 'data-testid': 'audit-arguments' }, text);
  return h('details.args-more', {},
    h('summary', {}, h('code', {}, `${text.slice(0, SHORT_ARGUMENTS - 40)}…`), ` (${fmt(text.length)} characters)`),
    h('pre.args-text', { 'data-testid': 'audit-arguments' }, JSON.stringify(args, null, 2)),
  );
}

/** The campaigns an entry names: each by its name, linked, its id in the title and in short below. */
function campaignsCell(ids: string[], names: Map<string, CampaignName | null>): HTMLElement {
  return h('td.audit-campaign', { 'data-testid': 'audit-campaign' },
    ...ids.map((id) => {
      const known = names.get(id);
      const label = known === undefined ? id : known === null ? 'deleted campaign' : known.name;
      return h('div', {},
        known === null ? h('span', { title: `Campaign id ${id}` }, label) : h('a', { href: `#/campaigns/${id}`, title: `Campaign id ${id}` }, label),
        known?.test ? h('span.test-mark', {}, 'TEST') : '',
        h('small', { 'data-testid': 'audit-campaign-id' }, id),
      );
    }),
  );
}

/** Who acted, in words: the operator key's name and role, the partner's name, or the admin key. */
const who = (e: Entry) => (e.operator ? `${e.operator.name} (${e.operator.role})` : e.partner ? `partner ${e.partner.name}` : e.actor === 'admin' ? 'admin key' : e.actor);

export async function auditLog(): Promise<void> {
  const input = (id: string, attrs: Record<string, string> = {}) => h('input', { id, ...attrs }) as HTMLInputElement;
  const operation = input('a-op', { placeholder: 'closeCampaign', 'data-testid': 'filter-operation' });
  const outcome = input('a-outcome', { placeholder: 'OK, FORBIDDEN…', 'data-testid': 'filter-outcome' });
  const actor = input('a-actor', { placeholder: 'admin, operator:<id>…', 'data-testid': 'filter-actor', title: 'admin, operator:<id> or partner:<id>' });
  const since = input('a-since', { type: 'datetime-local' });
  const until = input('a-until', { type: 'datetime-local' });
  const body = h('tbody', { 'data-testid': 'audit' });
  const count = h('p.meta', { 'data-testid': 'audit-count', role: 'status' });
  const status = h('div');
  const more = h('button.secondary', { type: 'button', hidden: true, 'data-testid': 'more', 'data-read': true }, 'Older entries') as HTMLButtonElement;
  let cursor: string | null = null;
  let generation = 0;
  const names = new Map<string, CampaignName | null>();
  const load = async (append: boolean) => {
    const mine = append ? generation : ++generation;
    try {
      const data = await gql<{ auditLog: { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string | null }; edges: { node: Entry }[] } }>(QUERY, {
        after: append ? cursor : null,
        operation: operation.value.trim() || null,
        outcome: outcome.value.trim() || null,
        actor: actor.value.trim() || null,
        since: fromLocalInput(since.value),
        until: fromLocalInput(until.value),
      });
      if (mine !== generation) return;
      const page = data.auditLog;
      const ids = page.edges.map(({ node: e }) => campaignIds(e.operation, e.arguments));
      // Names are a help: without them (an error) the ids show as they are.
      const named = await readCampaignNames(ids.flat(), names).then(() => null, (error: unknown) => error);
      if (mine !== generation) return;
      cursor = page.pageInfo.endCursor;
      status.replaceChildren(...(named ? [problem(named)] : []));
      const rows = page.edges.map(({ node: e }, i) =>
        h('tr', {},
          h('td', {}, when(e.at)),
          h('td', { title: e.actor }, who(e)),
          h('td', {}, e.operation),
          ids[i]!.length ? campaignsCell(ids[i]!, names) : h('td', {}, '—'),
          h('td', {}, h(`span.status.${e.outcome === 'OK' ? 'open' : 'closed'}`, {}, e.outcome)),
          h('td.args', {}, argumentsCell(e.arguments)),
        ),
      );
      if (append) body.append(...rows);
      else body.replaceChildren(...rowsOr(rows, 6, 'Nothing in the audit log matches these filters.'));
      count.textContent = `${page.totalCount.toLocaleString('en-US')} ${page.totalCount === 1 ? 'entry' : 'entries'}`;
      more.hidden = !page.pageInfo.hasNextPage;
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };
  more.addEventListener('click', () => void load(true));
  // Each label stays with its field when the row wraps.
  const field = (label: string, control: HTMLInputElement) => h('div.field', {}, h('label', { for: control.id }, label), control);
  screen(
    h('h1', {}, 'Audit log'),
    h('form.filters', { role: 'search', onsubmit: (e: Event) => (e.preventDefault(), void load(false)) },
      field('Operation', operation),
      field('Outcome', outcome),
      field('Actor', actor),
      field(`From, ${ZONE}`, since),
      field(`Until, ${ZONE}`, until),
      h('button', { type: 'submit', 'data-testid': 'filter' }, 'Filter'),
    ),
    count,
    status,
    table(['When', 'Who', 'Operation', 'Campaign', 'Outcome', 'Arguments'], body),
    more,
  );
  await load(false);
}
