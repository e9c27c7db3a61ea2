// The group claim's statement (claimGroup.ts) as a PL/pgSQL function, made from the very
// text that file defines — the statement has one source — and applied by the migrator like the
// function files of prisma/functions/ (checksummed in `_tessera_functions`; a changed statement is a
// changed function).
//
// Why a function: PL/pgSQL prepares each statement of a function once per session and keeps its plan
// (generic, with plan_cache_mode = force_generic_plan: db/sessionSettings.ts). A call is trivial to
// parse and plan. That is what keeps the claim fast where named prepared statements are impossible —
// behind PgBouncer in transaction mode — and it costs nothing measurable straight to PostgreSQL
// (docs/DESIGN.md, "The claim in $transaction", has the figures). `$n` in the statement's text is
// the function's n-th argument; `#variable_conflict use_column` lets its column names be the same as
// the result's.
import { createHash } from 'node:crypto';
import { CLAIM_GROUP_SQL } from './claimGroup';

export interface CodeFunction {
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

function plpgsql(name: string, args: string, returns: string, statement: string): CodeFunction {
  const sql = `CREATE OR REPLACE FUNCTION ${name}(${args})
RETURNS TABLE (${returns})
LANGUAGE plpgsql AS $claim$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${statement.trim()};
END
$claim$`;
  return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
}

const CAMPAIGN_RESULT = `campaign_name text, campaign_status campaign_status, campaign_opens_at timestamptz, campaign_closes_at timestamptz,
  campaign_per_holder_limit integer, campaign_created_at timestamptz`;

/** tessera_claim_group(campaigns, partners, holders, metadata, keys, hashes, holder ranks, partner ranks, starts): arrays, one element per request. */
export const CLAIM_GROUP_FUNCTION = plpgsql(
  'tessera_claim_group',
  'uuid[], uuid[], text[], jsonb[], text[], text[], integer[], integer[], integer[]',
  `ord bigint, verdict text, id uuid, sequence bigint, allocated_at timestamptz, ticket_id bigint, ticket_code text, ${CAMPAIGN_RESULT}`,
  CLAIM_GROUP_SQL,
);

// (The first look, tessera_claim_one, is a function file: prisma/functions/tessera_claim_one.sql.)
export const CLAIM_FUNCTIONS: readonly CodeFunction[] = [CLAIM_GROUP_FUNCTION];
