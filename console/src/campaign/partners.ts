// The partners of a campaign's page: per partner, its allocated and held tickets and its quota.
import { fmt, h, rowsOr, table } from '../ui';
import type { CampaignDetail } from './model';

export function partnersPanel() {
  const body = h('tbody');
  const element = h('div', {}, h('h2', {}, 'Partners'), table(['Partner', 'Allocated', 'Held', 'Quota'], body));
  const show = (c: CampaignDetail) => {
    body.replaceChildren(
      ...rowsOr(
        c.partnerStats.map((p) => h('tr', {}, h('td', {}, p.partner.name), h('td', {}, fmt(p.allocated)), h('td', {}, fmt(p.held)), h('td', {}, p.quota === null ? 'none' : fmt(p.quota)))),
        4,
        'No partner has claimed here yet, and none has a quota.',
      ),
    );
  };
  return { element, show };
}
