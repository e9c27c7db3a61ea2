// The allotments of a campaign's page: tickets set aside per partner — size, used, remaining, and
// when the allotment lapses (or lapsed).
import { fmt, h, rowsOr, table, when } from '../ui';
import type { CampaignDetail } from './model';

const lapse = (a: CampaignDetail['allotments'][number]) => (a.lapsedAt ? h('span', {}, 'lapsed ', when(a.lapsedAt)) : a.lapsesAt ? when(a.lapsesAt) : 'when the campaign ends');

export function allotmentsPanel() {
  const body = h('tbody', { 'data-testid': 'allotments' });
  const element = h('section', {}, h('h2', {}, 'Allotments'), table(['Partner', 'Size', 'Used', 'Remaining', 'Lapses'], body));
  const show = (c: CampaignDetail) => {
    body.replaceChildren(
      ...rowsOr(
        c.allotments.map((a) => h('tr', {}, h('td', {}, a.partner.name), h('td', {}, fmt(a.size)), h('td', {}, fmt(a.used)), h('td', {}, fmt(a.remaining)), h('td', {}, lapse(a)))),
        5,
        'No allotments: every ticket is in the general pool.',
      ),
    );
  };
  return { element, show };
}
