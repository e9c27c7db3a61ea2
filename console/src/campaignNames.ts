// The campaigns an audit entry acted on, by name. The API has no "campaigns by ids" field, so the ids
// of a page of entries are read in one request with each id under its own alias of campaign(id:) —
// never one request per row. The server refuses an operation with more aliases than
// GRAPHQL_MAX_ALIASES (15 unless configured): more distinct ids than that on one page are read in
// as many requests of 15, side by side. A campaign since deleted (purged test data) reads as null.
import { gql } from './api';

const ALIASES_PER_REQUEST = 15;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Operations whose `id` argument is a campaign's (schema.graphql). */
const CAMPAIGN_BY_ID = new Set(['openCampaign', 'closeCampaign', 'updateCampaign', 'resetTestCampaign', 'repairCampaign', 'verifyCampaign']);

export interface CampaignName {
  name: string;
  test: boolean;
}

/** The campaign ids in an entry's arguments: campaignId and campaignIds at any depth, `id` of a campaign operation. */
export function campaignIds(operation: string, args: unknown): string[] {
  const found = new Set<string>();
  const walk = (value: unknown, depth: number) => {
    if (depth > 3 || value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) return value.forEach((v) => walk(v, depth + 1));
    for (const [key, v] of Object.entries(value)) {
      const isId = (x: unknown): x is string => typeof x === 'string' && UUID.test(x);
      if (key === 'campaignId' && isId(v)) found.add(v.toLowerCase());
      else if (key === 'campaignIds' && Array.isArray(v)) v.filter(isId).forEach((id) => found.add(id.toLowerCase()));
      else if (key === 'id' && depth === 0 && CAMPAIGN_BY_ID.has(operation) && isId(v)) found.add(v.toLowerCase());
      else walk(v, depth + 1);
    }
  };
  walk(args, 0);
  return [...found];
}

/** Reads the names of `ids` not yet in `known` into it (null for a campaign that no longer exists). */
export async function readCampaignNames(ids: string[], known: Map<string, CampaignName | null>): Promise<void> {
  const missing = [...new Set(ids)].filter((id) => !known.has(id));
  const chunks: string[][] = [];
  for (let i = 0; i < missing.length; i += ALIASES_PER_REQUEST) chunks.push(missing.slice(i, i + ALIASES_PER_REQUEST));
  await Promise.all(
    chunks.map(async (chunk) => {
      const query = `query(${chunk.map((_, k) => `$c${k}: ID!`).join(', ')}) { ${chunk.map((_, k) => `c${k}: campaign(id: $c${k}) { name test }`).join(' ')} }`;
      const data = await gql<Record<string, CampaignName | null>>(query, Object.fromEntries(chunk.map((id, k) => [`c${k}`, id])));
      chunk.forEach((id, k) => known.set(id, data[`c${k}`] ?? null));
    }),
  );
}
