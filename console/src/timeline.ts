// A campaign's chart: Campaign.timeline(bucket: MINUTE) drawn with uPlot — per minute, the tickets
// allocated (claims and confirmed holds, less those since released: the API counts ACTIVE
// allocations) and the claims refused, with the running total. A hold is not on it until it is
// confirmed, so the text beside the chart says how many are held now, and the empty state says
// what there is when there is nothing to draw: holds, or allocations none of which is active.
import uPlot from 'uplot';
import { fmt, h, ZONE, zoneAt } from './ui';

export interface TimelinePoint {
  at: string;
  allocated: number;
  cumulative: number;
  refused: number;
  refusals: { code: string; count: number }[];
}

/** What the chart needs: the points, and the figures its text and empty state name. */
export interface ChartInput {
  timeline: TimelinePoint[];
  stats: { held: number };
  /** Every allocation of the campaign, released and expired ones included. */
  allocations: { totalCount: number };
}

const plural = (n: number, one: string, many: string) => `${fmt(n)} ${n === 1 ? one : many}`;

/** The empty chart's sentence: true for a campaign with holds or past allocations as for a new one. */
export function emptyText(c: ChartInput): string {
  const held = c.stats.held;
  const all = c.allocations.totalCount;
  if (held > 0) {
    return `Nothing to chart yet: ${plural(held, 'ticket is', 'tickets are')} held now, and the chart counts allocations (claims and confirmed holds) and refused claims per minute. A hold shows here once it is confirmed.`;
  }
  if (all > 0) {
    return `Nothing to chart: none of the ${plural(all, 'allocation', 'allocations')} so far is active (released, or holds that expired or were declined), and no claim was refused.`;
  }
  return 'No claims yet: the chart starts with the first claim, confirmed hold or refused claim.';
}

export function timelineChart(): { section: HTMLElement; draw(c: ChartInput): void } {
  const chart = h('div.chart', { 'data-testid': 'timeline', role: 'img', 'aria-label': 'Claims and refusals per minute' });
  const empty = h('p.empty', { 'data-testid': 'timeline-empty', hidden: true });
  const zone = h('p.meta', { 'data-testid': 'timeline-zone', hidden: true }, `Each bar is a minute; times in ${ZONE}.`);
  const heldNote = h('p.meta', { 'data-testid': 'timeline-held', hidden: true });
  const section = h('section', { 'data-testid': 'timeline-section' }, h('h2', {}, 'Claims and refusals per minute'), zone, chart, heldNote, empty);
  let plot: uPlot | null = null;
  let chartNow = 0;

  const draw = (c: ChartInput) => {
    const points = c.timeline;
    empty.hidden = points.length > 0;
    empty.textContent = emptyText(c);
    chart.hidden = points.length === 0;
    zone.hidden = chart.hidden;
    heldNote.hidden = chart.hidden || c.stats.held === 0;
    heldNote.textContent = `Held now, not on the chart until confirmed: ${plural(c.stats.held, 'ticket', 'tickets')}.`;
    if (points.length === 0) return;
    // x: minutes before now (the last 10 at least), so a sale of a few minutes is not drawn on an
    // axis of years; labels give the clock time.
    const now = Math.floor(Date.now() / 60_000);
    chartNow = now;
    const minutes = points.map((p) => Math.floor(Date.parse(p.at) / 60_000) - now);
    const series: uPlot.AlignedData = [minutes, points.map((p) => p.allocated), points.map((p) => p.refused), points.map((p) => p.cumulative)];
    chart.setAttribute('aria-label', `Claims and refusals per minute: ${fmt(points.reduce((n, p) => n + p.allocated, 0))} allocated, ${fmt(points.reduce((n, p) => n + p.refused, 0))} refused`);
    if (plot) return plot.setData(series);
    // The labels follow the latest data's "now" (the chart is drawn once and fed new data after).
    const clock = (offset: number) => new Date((chartNow + offset) * 60_000).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    // An axis as wide as its longest label: "120,000" must not be clipped to "0,000".
    const fit = (_u: uPlot, values: string[] | null) => 16 + 8 * Math.max(3, ...(values ?? []).map((v) => String(v).length));
    const counts = (_u: uPlot, ticks: number[]) => ticks.map((t) => (Number.isInteger(t) ? fmt(t) : ''));
    plot = new uPlot(
      {
        width: Math.min(900, chart.clientWidth || 900),
        height: 220,
        legend: { live: false },
        series: [
          { label: `Minute, ${ZONE}` },
          { label: 'Allocated', stroke: '#1d4ed8', fill: 'rgba(37,99,235,0.35)', paths: uPlot.paths.bars!({ size: [0.4, 30], align: -1 }) },
          { label: 'Refused', stroke: '#b91c1c', fill: 'rgba(220,38,38,0.30)', paths: uPlot.paths.bars!({ size: [0.4, 30], align: 1 }) },
          { label: 'Total allocated', stroke: '#15803d', width: 2, scale: 'total', points: { show: true } },
        ],
        axes: [
          { values: (_u, ticks) => ticks.map(clock), space: 56, label: `Minute, ${zoneAt(new Date())}`, labelSize: 20 },
          { values: counts, size: fit, label: 'per minute' },
          { scale: 'total', side: 1, values: counts, size: fit, grid: { show: false }, label: 'total' },
        ],
        scales: {
          x: { time: false, range: (_u, min) => [Math.min(Number.isFinite(min) ? min : 0, -10) - 0.5, 0.5] },
          y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
          total: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
        },
      },
      series,
      chart,
    );
  };
  return { section, draw };
}
