// The results files of `npm run bench`: each experiment's last full run in bench/results/<name>.json
// (what the bench measured, as data) and <name>.md (the same to read), and bench/results/summary.md,
// every experiment's bars from those files, remade after each run — so a run of some experiments
// (--only) replaces their files and leaves the others' as they were. The docs cite these files; the
// bench writes nothing else.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './harness';
import type { Bar, Row } from './experiments/report';

export const RESULTS_DIR = path.join(ROOT, 'bench/results');

/** Where and how a run measured: the same for every experiment of one run. */
export interface Machine {
  nproc: number;
  cpu: string;
  memory: string;
  node: string;
  postgres: string;
  /** "embedded", or DATABASE_URL and its host. */
  where: string;
  autovacuum: boolean;
  /** pgbench's version, or null: the SQL load went through pg. */
  pgbench: string | null;
  /** The commit measured (and whether src/, prisma/ or the packages had uncommitted changes). */
  code: string;
}

export interface ExperimentResults {
  experiment: string;
  summary: string;
  /** ISO time the experiment ended. */
  recordedAt: string;
  /** The command of the run, and the experiments it ran, in order. */
  command: string;
  run: string[];
  /** Minutes the experiment took; null when not known (a transcribed record). */
  minutes: number | null;
  /** The machine's 1-minute load average when the experiment began and ended. */
  load: { start: number; end: number };
  machine: Machine;
  rows: Row[];
  bars: Bar[];
  /** Set on a record copied from an earlier document rather than written by the bench: where from. */
  transcribed?: string;
}

const when = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

function machineLine(m: Machine, load: { start: number; end: number }): string {
  return (
    `nproc ${m.nproc} (${m.cpu}), ${m.memory}, Node ${m.node}, PostgreSQL ${m.postgres} (${m.where}), autovacuum ${m.autovacuum ? 'on' : '**off**'}, ` +
    `SQL load with ${m.pgbench ? `\`pgbench -n -M prepared -c N -j 2\` (${m.pgbench})` : 'pg (pgbench not installed: N clients in the bench process, named prepared statements)'}; ` +
    `load average ${load.start.toFixed(2)} at the start, ${load.end.toFixed(2)} at the end; the load generators on the same cores`
  );
}

const barRow = (b: Bar) => `| ${b.what} | ${b.figure} | ${b.target} | ${b.pass ? 'PASS' : '**MISS**'} |`;
const BARS_HEAD = ['| bar | figure | target | verdict |', '|---|---|---|---|'];

export function markdownOf(r: ExperimentResults): string {
  return [
    `# ${r.experiment}`,
    '',
    `${r.summary}. Written by \`npm run bench\` (bench/experiments/${r.experiment}.ts); see docs/BENCHMARKS.md for its baseline and how to read it.`,
    '',
    `Recorded ${when(r.recordedAt)} — \`${r.command}\` (${r.minutes === null ? '' : `this experiment ${r.minutes.toFixed(1)} minutes; `}the run: ${r.run.join(', ')}) — code at ${r.machine.code}.`,
    ...(r.transcribed ? ['', `Transcribed: ${r.transcribed}`] : []),
    '',
    `Machine: ${machineLine(r.machine, r.load)}.`,
    '',
    '| measurement | result |',
    '|---|---|',
    ...r.rows.map((row) => `| ${row.what} | ${row.value} |`),
    ...(r.bars.length > 0 ? ['', 'Bars (a MISS is a measurement, not a failure of the bench):', '', ...BARS_HEAD, ...r.bars.map(barRow)] : []),
    '',
  ].join('\n');
}

/** Writes `r` as bench/results/<experiment>.json and .md. */
export function writeExperiment(r: ExperimentResults): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(path.join(RESULTS_DIR, `${r.experiment}.json`), `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(path.join(RESULTS_DIR, `${r.experiment}.md`), markdownOf(r));
}

/** Remakes bench/results/summary.md from the results files of `order`'s experiments that have one. */
export function writeSummary(order: readonly string[]): void {
  const recorded = order.map((name) => {
    const file = path.join(RESULTS_DIR, `${name}.json`);
    return { name, results: existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ExperimentResults) : null };
  });
  const found = recorded.flatMap((r) => (r.results ? [r.results] : []));
  const verdicts = (bars: Bar[]) => {
    const missed = bars.filter((b) => !b.pass).length;
    if (bars.length === 0) return 'none';
    return missed === 0 ? `${bars.length} PASS` : `${bars.length - missed > 0 ? `${bars.length - missed} PASS, ` : ''}**${missed} MISS**`;
  };
  const lines = [
    '# Benchmark results: every bar',
    '',
    "Each experiment's bars from its last recorded run (bench/results/<experiment>.md has its every figure). Made by `npm run bench` after each run; " +
      'experiments of different runs are on the same machine only when their lines say so, and ratios are meaningful within one run only.',
    '',
    '| experiment | recorded | code | bars |',
    '|---|---|---|---|',
    ...recorded.map(({ name, results: r }) =>
      r ? `| [${name}](${name}.md) | ${when(r.recordedAt)} | ${r.machine.code} | ${verdicts(r.bars)} |` : `| ${name} | not recorded yet | | |`,
    ),
    '',
    '| experiment | bar | figure | target | verdict |',
    '|---|---|---|---|---|',
    ...found.flatMap((r) => r.bars.map((b) => `| ${r.experiment} ${barRow(b)}`)),
    '',
  ];
  writeFileSync(path.join(RESULTS_DIR, 'summary.md'), lines.join('\n'));
}
