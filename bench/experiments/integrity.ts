// The end of every run: the whole bench database once more, every campaign — no ticket with two live
// allocations — and the totals of lost and duplicated tickets over every claim run of the run (each
// checked as it ended). Bar: 0 lost, 0 duplicated; the bench fails on any.
import { ticketsLiveTwice } from '../../test/helpers/sql';
import type { Experiment } from './context';
import type { Report } from './report';

export const integrity: Experiment = {
  name: 'integrity',
  summary: 'no ticket with two live allocations in the whole bench database, no ticket lost or given twice by any claim run (always runs, last)',
  async run(ctx, report: Report) {
    const twice = (await ticketsLiveTwice(ctx.sql, null)).length;
    if (twice > 0) ctx.failures.push(`${twice} tickets have two live allocations`);
    report.record('tickets with two live allocations, whole bench database (must be 0)', String(twice));
    report.bar({
      what: 'lost or duplicated tickets, every claim run',
      figure: `${ctx.integrity.lost} lost, ${ctx.integrity.duplicated} duplicated`,
      target: '0',
      pass: ctx.integrity.lost === 0 && ctx.integrity.duplicated === 0 && twice === 0,
    });
  },
};
