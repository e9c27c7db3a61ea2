// Tracing: what hot claims pay for OpenTelemetry tracing at each sampling ratio that has a bar,
// measured by bench/tracingAb.ts's measureTracing — pairs of new Tessera instances on a database of
// their own, one traced (exporting OTLP to a receiver in a process of its own), its twin not, in
// alternating runs (ABBA), hot claims at 64 connections.
// Bars (TRACING_BARS of tracingAb.ts): traced ÷ untraced claims per second ≥ 0.80× at ratio 1.0,
// ≥ 0.90× at ratio 0.1.
import { measureTracing, TRACING_BARS } from '../tracingAb';
import type { Experiment } from './context';
import { fmt, x, type Report } from './report';
import { quick } from './settings';

const RATIOS = [...TRACING_BARS.keys()].sort((a, b) => b - a);
const label = (ratio: number) => `ratio ${ratio.toFixed(1)}`;

export const tracing: Experiment = {
  name: 'tracing',
  summary: `hot claims with tracing on at sampling ${RATIOS.map(label).join(' and ')} against untraced twins (bench/tracingAb.ts)`,
  async run(ctx, report: Report) {
    for (const ratio of RATIOS) {
      const r = await measureTracing({ ratio, serverUrl: ctx.serverUrl, quick, log: (line) => console.log(`           tracingAb: ${line}`) });
      report.record(
        `claimTicket hot, 64 connections: tracing on (${label(ratio)}) ÷ off (bench/tracingAb.ts, ${r.pairs.length} new pairs of instances)`,
        `${x(r.throughput)} (the pairs: ${r.pairs.map(x).join(', ')})`,
      );
      report.record(`tracing on (${label(ratio)}) ÷ off: CPU per claim, event loop and process`, `${x(r.cpuPerClaim.eventLoop)}, ${x(r.cpuPerClaim.process)}`);
      report.record(
        `spans exported while tracing was on (${label(ratio)}), received by tracingAb's OTLP receiver`,
        `${fmt(r.exported.spans)} spans in ${fmt(r.exported.requests)} requests (${fmt(r.exported.bytes / 1e6)} MB)`,
      );
      report.atLeast(`claimTicket hot, tracing on (${label(ratio)}) ÷ off`, r.throughput, TRACING_BARS.get(ratio)!);
    }
  },
};
