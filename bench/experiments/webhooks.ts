// The claim path with webhooks configured: ten enabled endpoints of another partner, so every claim
// appends its event to the outbox and the dispatcher drains it, while none is routed to them
// (deliveries are the dispatcher's work, not the claim's); then adjacent runs with the endpoints
// disabled, so the machine's drift falls on both alike. The endpoints stay disabled.
// Bar, hot and spread: with ten endpoints ÷ without ≥ 0.90× ("unchanged", within what two adjacent
// runs of the same code differ by here).
import { sealSecret } from '../../src/webhooks/secrets';
import { newWebhookSecret } from '../../src/webhooks/signature';
import { hotAndSpread, type Experiment } from './context';
import { ratio, type Report } from './report';

/** The key the bench's servers seal webhook secrets with (bench/run.ts hands it to every instance). */
export const BENCH_WEBHOOK_KEY = Buffer.alloc(32, 11);

export const webhooks: Experiment = {
  name: 'webhooks',
  summary: 'hot and spread claims with ten webhook endpoints configured, against adjacent runs without',
  async run(ctx, report: Report) {
    const { sql } = ctx;
    const partner = (
      await sql.query<{ id: string }>(`INSERT INTO partners (name, key_prefix, key_hash) VALUES ('bench webhooks', 'tsp_benchhooks', repeat('0', 64)) RETURNING id`)
    ).rows[0]!.id;
    await sql.query(
      `INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed)
       SELECT $1, 'http://127.0.0.1:9/hook-' || i, ARRAY['ALLOCATION_CREATED', 'CAMPAIGN_CLOSED'], $2 FROM generate_series(1, 10) i`,
      [partner, sealSecret(newWebhookSecret(), BENCH_WEBHOOK_KEY)],
    );
    const on = await hotAndSpread(ctx, report, ctx.server.url, 'ten webhook endpoints');
    await sql.query('UPDATE webhook_endpoints SET enabled = false');
    const off = await hotAndSpread(ctx, report, ctx.server.url, 'no webhook endpoint');
    for (const name of ['hot', 'spread'] as const) {
      report.record(`claimTicket ${name}: with ten webhook endpoints ÷ without (adjacent runs)`, ratio(on[name].requestsPerSecond, off[name].requestsPerSecond));
    }
    for (const name of ['hot', 'spread'] as const) {
      report.atLeast(`claimTicket ${name} with ten webhook endpoints ÷ without`, on[name].requestsPerSecond / off[name].requestsPerSecond, 0.9);
    }
  },
};
