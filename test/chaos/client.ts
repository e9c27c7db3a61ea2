// The chaos client: sends claims over HTTP like any partner would, and classifies each answer the
// way a Jepsen history does — ok (which allocation and ticket), refused (which code), or unknown
// (timeout, connection reset, 5xx, unexpected GraphQL error): the claim may or may not have happened.
import { graphqlData } from '../helpers/graphql';

export type Outcome =
  | { kind: 'ok'; allocationId: string; ticketCode: string; sequence: number }
  | { kind: 'refused'; code: string }
  | { kind: 'unknown'; reason: string; retryAfter?: string | null };

export interface ClaimRequest {
  campaignId: string;
  holder: string;
  metadata: Record<string, unknown>;
  idempotencyKey: string;
}

const CLAIM = `mutation Claim($input: ClaimTicketInput!) {
  claimTicket(input: $input) { allocation { id sequence ticket { code } } error { code } }
}`;

export async function sendClaim(
  url: string,
  apiKey: string,
  input: ClaimRequest,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<Outcome> {
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])];
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ query: CLAIM, operationName: 'Claim', variables: { input } }),
      signal: AbortSignal.any(signals),
    });
    text = await res.text();
  } catch (error) {
    const e = error as { name?: string; cause?: { code?: string } };
    return { kind: 'unknown', reason: e.name === 'TimeoutError' || e.name === 'AbortError' ? e.name : (e.cause?.code ?? 'network') };
  }
  if (res.status >= 500) return { kind: 'unknown', reason: `http ${res.status}`, retryAfter: res.headers.get('retry-after') };
  let body: { data?: { claimTicket?: { allocation: any; error: any } }; errors?: { extensions?: { code?: string } }[] };
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: 'unknown', reason: `http ${res.status}: not JSON` };
  }
  const payload = body.data?.claimTicket;
  if (payload?.allocation) {
    return { kind: 'ok', allocationId: payload.allocation.id, ticketCode: payload.allocation.ticket.code, sequence: payload.allocation.sequence };
  }
  if (payload?.error) return { kind: 'refused', code: payload.error.code };
  return { kind: 'unknown', reason: `graphql ${body.errors?.[0]?.extensions?.code ?? res.status}` };
}

/** An admin or partner GraphQL call that must succeed (set-up and stats reads). */
export function gql<T = any>(url: string, key: string, query: string, variables?: Record<string, unknown>, timeoutMs = 10_000): Promise<T> {
  return graphqlData<T>(url, key, query, variables, { timeoutMs });
}
