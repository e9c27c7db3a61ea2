// The reads on the 1,000,000-ticket campaign the fill experiment left 99% allocated: campaign.stats
// (a partner's, 50 sequential requests), timeline(MINUTE) and partnerStats (the operator's, 10 each).
// No bar.
import { ADMIN_KEY, sequentialLatency } from '../harness';
import { needed, type Experiment } from './context';
import { fmt, ms, type Report } from './report';
import { BIG } from './settings';

export const reads: Experiment = {
  name: 'reads',
  summary: 'campaign.stats, timeline and partnerStats on the filled 1,000,000-ticket campaign',
  needs: ['fill'],
  async run(ctx, report: Report) {
    const big = needed(ctx.big, 'the filled campaign', 'fill');
    const url = ctx.server.url;
    const stats = await sequentialLatency(url, ctx.partnerKey, 'query($id: ID!) { campaign(id: $id) { stats { total allocated held available fillRate soldOutAt } } }', { id: big }, 50);
    report.record(`campaign.stats on ${fmt(BIG)} tickets (sequential)`, `p50 ${ms(stats.p50)}  p99 ${ms(stats.p99)}`);
    const timeline = await sequentialLatency(url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { timeline(bucket: MINUTE) { at allocated cumulative } } }', { id: big }, 10);
    report.record(`campaign.timeline(MINUTE) on ${fmt(BIG)} tickets`, `p50 ${ms(timeline.p50)}  p99 ${ms(timeline.p99)}`);
    const partners = await sequentialLatency(url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { partnerStats { partner { id } allocated held quota } } }', { id: big }, 10);
    report.record(`campaign.partnerStats on ${fmt(BIG)} tickets`, `p50 ${ms(partners.p50)}  p99 ${ms(partners.p99)}`);
  },
};
