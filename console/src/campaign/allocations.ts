// A campaign's allocations: find a holder's or a ticket's (the newest 50), release a live one
// (asked first) to a key that may, and export every allocation as CSV — read a page at a time with
// the CLI's own query, header and row writer (src/cli/csv.ts), so both write the same file.
import { EXPORT_QUERY, HEADER, csvRow, type ExportedAllocation } from '../../../src/cli/csv';
import { gql } from '../api';
import { action, ask, fmt, h, may, problem, rowsOr, stackRow, table, when } from '../ui';
import { ALLOCATION_FIELDS, type LatestAllocation } from './model';

const SEARCH = `query($id: ID!, $holder: String, $code: String) {
  campaign(id: $id) { allocations(first: 50, order: NEWEST_FIRST, holder: $holder, code: $code) { totalCount edges { node { ${ALLOCATION_FIELDS} } } } }
}`;

/** Find a holder's or a ticket's allocations, release them, and export every allocation as CSV. */
export function allocationsPanel(campaignId: string, changed: () => void): HTMLElement {
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
                    if (!(await ask(`Release ticket ${a.ticket.code} of ${a.holder}?`, 'Release', { danger: true }))) return;
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
