// The claim and the hold as the test files send them: one query each, selecting every field a test
// reads, and one function each (TestServer's claim and hold) that answers the typed result.
// A GraphQL error (validation, authentication, a masked failure) is not a typed result: those
// functions throw it, and a test about such errors sends CLAIM or HOLD through `gql` itself.
import type { GraphQLResponse } from './graphql';

const ALLOCATION = `allocation {
      id sequence status holder metadata idempotencyKey allocatedAt expiresAt test
      ticket { id code status } partner { id } campaign { id test }
    }
    error { code message }`;

export const CLAIM = `mutation Claim($input: ClaimTicketInput!) {
  claimTicket(input: $input) {
    ${ALLOCATION}
  }
}`;

export const HOLD = `mutation Hold($input: HoldTicketInput!) {
  holdTicket(input: $input) {
    ${ALLOCATION}
  }
}`;

export interface Allocated {
  id: string;
  sequence: number;
  status: string;
  holder: string;
  metadata: unknown;
  idempotencyKey: string | null;
  allocatedAt: string;
  expiresAt: string | null;
  test: boolean;
  ticket: { id: string; code: string; status: string };
  partner: { id: string };
  campaign: { id: string; test: boolean };
}

/** What claimTicket and holdTicket answer: an allocation, or a typed refusal. */
export interface AllocationAnswer {
  allocation: Allocated | null;
  error: null | { code: string; message: string };
}

export interface ClaimPayload {
  claimTicket: AllocationAnswer;
}

export interface HoldPayload {
  holdTicket: AllocationAnswer;
}

/** ClaimTicketInput or HoldTicketInput; `holder` defaults to "h", a hold's `ttlSeconds` to 600. */
export interface AllocationInput {
  campaignId: string;
  holder?: string;
  [field: string]: unknown;
}

type Gql = <T>(key: string | null, query: string, variables?: Record<string, unknown>) => Promise<GraphQLResponse<T>>;

async function answerOf(gql: Gql, key: string, query: string, field: 'claimTicket' | 'holdTicket', input: Record<string, unknown>): Promise<AllocationAnswer> {
  const res = await gql<Record<typeof field, AllocationAnswer>>(key, query, { input });
  const answer = res.body.data?.[field];
  if (!answer || res.body.errors?.length) throw new Error(`${field} answered no typed result (HTTP ${res.status}): ${JSON.stringify(res.body.errors ?? res.body)}`);
  return answer;
}

export function claimTicket(gql: Gql, key: string, input: AllocationInput): Promise<AllocationAnswer> {
  return answerOf(gql, key, CLAIM, 'claimTicket', { holder: 'h', ...input });
}

export function holdTicket(gql: Gql, key: string, input: AllocationInput): Promise<AllocationAnswer> {
  return answerOf(gql, key, HOLD, 'holdTicket', { holder: 'h', ttlSeconds: 600, ...input });
}

/** The answer's allocation; throws with the refusal's code when it has none. */
export function allocated(answer: AllocationAnswer): Allocated {
  if (!answer.allocation) throw new Error(`expected an allocation, got ${answer.error?.code ?? 'nothing'}: ${answer.error?.message ?? ''}`);
  return answer.allocation;
}
