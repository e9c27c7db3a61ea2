// A campaign's live figures: the fill bar (allocated and held of the total) and the counts beside it
// — total, allocated, held, available, allotted, retired, fill, and whether and since when it is sold
// out — as the campaignStats subscription sends them. The list's rows use the same fill bar.
import { fmt, h, pct, problem, when } from '../ui';
import type { Stats } from './model';

export function fillBar(stats: Stats): HTMLElement {
  const total = Math.max(stats.total, 1);
  return h(
    'div.fill',
    {
      'data-testid': 'fill-bar',
      'data-allocated': String(stats.allocated),
      'data-total': String(stats.total),
      role: 'img',
      'aria-label': `${fmt(stats.allocated)} allocated, ${fmt(stats.held)} held of ${fmt(stats.total)}`,
      title: `${fmt(stats.allocated)} allocated, ${fmt(stats.held)} held of ${fmt(stats.total)}`,
    },
    h('div.fill-allocated', { style: `width:${(stats.allocated / total) * 100}%` }),
    h('div.fill-held', { style: `width:${(stats.held / total) * 100}%` }),
  );
}

/** The "Live" section: empty until the first figures arrive. */
export function livePanel() {
  const figures = h('dl.figures', { 'data-testid': 'figures' });
  const bar = h('div', { 'data-testid': 'live-bar' });
  const element = h('section', {}, h('h2', {}, 'Live'), bar, figures);
  const show = (s: Stats) => {
    bar.replaceChildren(fillBar(s));
    figures.replaceChildren(
      ...(
        [
          ['Total', fmt(s.total)],
          ['Allocated', fmt(s.allocated)],
          ['Held', fmt(s.held)],
          ['Available', fmt(s.available)],
          ['Allotted', fmt(s.allotted)],
          ['Retired', fmt(s.void)],
          ['Fill', pct(s.fillRate)],
          ['Sold out', s.soldOut ? h('span', {}, 'yes, since ', when(s.soldOutAt)) : s.soldOutAt ? h('span', {}, 'no (first sold out ', when(s.soldOutAt), ')') : 'no'],
        ] as const
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', { 'data-testid': `figure-${k.toLowerCase().replace(' ', '-')}` }, v)]),
    );
  };
  return { element, show, failed: (error: unknown) => figures.replaceChildren(problem(error)) };
}
