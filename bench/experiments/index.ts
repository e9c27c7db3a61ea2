// The experiments of `npm run bench`, in the order a full run runs them. An experiment that compares
// with another's figures names it in `needs`, and `--only` runs that one first; history writes ten
// million rows and runs after the others; integrity ends every run.
import { ballot } from './ballot';
import { ceilings } from './ceilings';
import { claims } from './claims';
import { claimsDuringLoads } from './claimsDuringLoads';
import type { Experiment } from './context';
import { cost } from './cost';
import { fill } from './fill';
import { floor } from './floor';
import { fresh } from './fresh';
import { history } from './history';
import { integrity } from './integrity';
import { loads } from './loads';
import { pgbouncer } from './pgbouncer';
import { reads } from './reads';
import { replication } from './replication';
import { tracing } from './tracing';
import { webhooks } from './webhooks';
import { workers } from './workers';

export const EXPERIMENTS: readonly Experiment[] = [
  loads,
  ceilings,
  claimsDuringLoads,
  floor,
  claims,
  fresh,
  cost,
  pgbouncer,
  webhooks,
  tracing,
  replication,
  workers,
  fill,
  reads,
  ballot,
  history,
  integrity,
];

/**
 * The experiments to run for `only` (every one when empty): those named, the ones they need, and
 * integrity, in EXPERIMENTS' order; or the names no experiment has.
 */
export function selectExperiments(only: readonly string[]): { run: Experiment[]; added: string[] } | { unknown: string[] } {
  const byName = new Map(EXPERIMENTS.map((e) => [e.name, e]));
  const unknown = only.filter((name) => !byName.has(name));
  if (unknown.length > 0) return { unknown };
  if (only.length === 0) return { run: [...EXPERIMENTS], added: [] };
  const chosen = new Set<string>();
  const add = (name: string) => {
    if (chosen.has(name)) return;
    chosen.add(name);
    for (const need of byName.get(name)!.needs ?? []) add(need);
  };
  for (const name of only) add(name);
  chosen.add(integrity.name);
  const added = [...chosen].filter((name) => !only.includes(name) && name !== integrity.name);
  return { run: EXPERIMENTS.filter((e) => chosen.has(e.name)), added };
}
