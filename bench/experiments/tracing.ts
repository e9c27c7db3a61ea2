// Tracing: what hot claims pay for OpenTelemetry tracing, at each sampling ratio of TRACING_BARS,
// measured by bench/tracingAb.ts — pairs of new Tessera instances on a database of their own, one
// traced (exporting OTLP to a receiver in a process of its own), its twin not, in alternating runs
// (ABBA) — run as a child process, so its load generator and receiver start as fresh as its servers.
// Bars: tracing on ÷ off, hot claims at 64 connections, ≥ 0.80× at ratio 1.0 and ≥ 0.90× at 0.1.
import { spawn } from 'node:child_process';
import { ROOT } from '../harness';
import type { Experiment } from './context';
import { fmt, type Report } from './report';
import { TRACING_BARS } from './settings';

/** What one tracingAb run printed: its ratio over all pairs, and each pair's. */
interface AbResult {
  pairs: number;
  on: number;
  off: number;
  perPair: number[];
  /** The rest of its summary line: CPU per claim of each side, the receiver, PostgreSQL, the load generator. */
  cpu: string;
  exported: string;
}

export const tracing: Experiment = {
  name: 'tracing',
  summary: `hot claims with tracing on at sampling ratios ${TRACING_BARS.map((b) => b.ratio.toFixed(1)).join(' and ')} against untraced twins (bench/tracingAb.ts)`,
  async run(ctx, report: Report) {
    for (const { ratio, atLeast } of TRACING_BARS) {
      const ab = await tracingAb(ctx.serverUrl, ratio);
      const label = `ratio ${ratio.toFixed(1)}`;
      report.record(
        `claimTicket hot, 64 connections: tracing on (${label}) ÷ off (bench/tracingAb.ts, ${ab.pairs} new pairs of instances)`,
        `${fmt(ab.on)} / ${fmt(ab.off)}/s = ${(ab.on / ab.off).toFixed(2)}× (the pairs: ${ab.perPair.map((r) => `${r.toFixed(2)}×`).join(', ')})`,
      );
      report.record(`tracing on (${label}) ÷ off: CPU per claim`, ab.cpu);
      report.record(`spans exported while tracing was on (${label}), received by tracingAb's OTLP receiver`, ab.exported);
      report.atLeast(`claimTicket hot, tracing on (${label}) ÷ off`, ab.on / ab.off, atLeast);
    }
  },
};

/** Runs bench/tracingAb.ts on `serverUrl`'s server with tracing at `ratio`, its output shown as it comes, and reads its summary. */
async function tracingAb(serverUrl: string, ratio: number): Promise<AbResult> {
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/tracingAb.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: serverUrl, AB_RATIO: String(ratio) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const show = (d: Buffer) => {
      out += d.toString();
      process.stdout.write(d.toString().replace(/^(?=.)/gm, '           tracingAb: '));
    };
    child.stdout.on('data', show);
    child.stderr.on('data', show);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`bench/tracingAb.ts at ratio ${ratio} exited with ${code}`))));
  });
  const all = /^all (\d+) pairs: tracing on ÷ off: [\d.]+× \((\d+) \/ (\d+)\/s\); (.*)$/m.exec(output);
  if (!all) throw new Error(`bench/tracingAb.ts at ratio ${ratio}: no "all … pairs" line in its output`);
  const perPair = [...output.matchAll(/^pair \d+: tracing on ÷ off: ([\d.]+)×/gm)].map((m) => Number(m[1]));
  const exported = /^exported: (.*)$/m.exec(output)?.[1] ?? 'not reported';
  return { pairs: Number(all[1]), on: Number(all[2]), off: Number(all[3]), perPair, cpu: all[4]!, exported };
}
