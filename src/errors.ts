// Error codes and how they reach clients.
//
// Two tiers (as in Vendure): expected outcomes of a claim-like mutation are typed results in the
// payload (`ClaimError`, codes from the ClaimErrorCode enum); everything else is a GraphQL error
// whose `extensions.code` is one of ErrorCode below. Unexpected failures are logged with their
// cause and masked as INTERNAL_SERVER_ERROR.
import { GraphQLError } from 'graphql';
import type { ClaimErrorCode } from './generated/graphql';

export const ErrorCode = {
  /** No, malformed, unknown or revoked API key. HTTP 401. */
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  /** A partner calling an admin operation or reading another partner's data. */
  FORBIDDEN: 'FORBIDDEN',
  /** An argument failed validation; `extensions.field` names it. */
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  /**
   * An operation named a campaign (or other object) that does not exist — or, for a partner, one
   * that is another partner's (webhook endpoints and deliveries): the same answer either way.
   */
  NOT_FOUND: 'NOT_FOUND',
  /** scopePartnerKey named a campaign that does not exist; `extensions.campaignId` says which. */
  CAMPAIGN_NOT_FOUND: 'CAMPAIGN_NOT_FOUND',
  /** A status change that is not allowed (e.g. opening a CLOSED campaign, redelivering to a deleted webhook endpoint). */
  INVALID_TRANSITION: 'INVALID_TRANSITION',
  /** A count limit is used up (e.g. webhook endpoints per partner); `extensions.limit` says how many. */
  LIMIT_REACHED: 'LIMIT_REACHED',
  /** The server lacks the configuration the operation needs (e.g. WEBHOOK_SECRET_KEY for createWebhook). */
  NOT_CONFIGURED: 'NOT_CONFIGURED',
  /** Tickets loaded into a CLOSED campaign. */
  CAMPAIGN_CLOSED: 'CAMPAIGN_CLOSED',
  /** A rehearsal control (advanceTestClock, resetTestCampaign) called on a live campaign. */
  LIVE_CAMPAIGN: 'LIVE_CAMPAIGN',
  /** The database is busy or unreachable; retry (a claim with its idempotency key). HTTP 503. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** The API key's rate limit (or the address's failed-authentication limit) is used up. HTTP 429, Retry-After. */
  RATE_LIMITED: 'RATE_LIMITED',
  /**
   * The operation is charged more points than the key can ever spend at once, so no wait would let
   * it run: ask for less (smaller pages, fewer fields) or a higher rate limit. `extensions.points` is
   * its charge, `extensions.allowance` the key's most (rateLimit.ts's keyBudget). HTTP 400, no
   * Retry-After; nothing was spent or executed.
   */
  COST_EXCEEDS_ALLOWANCE: 'COST_EXCEEDS_ALLOWANCE',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  UNAUTHENTICATED: 401,
  UNAVAILABLE: 503,
};

export function apiError(code: ErrorCode, message: string, extensions: Record<string, unknown> = {}): GraphQLError {
  const status = HTTP_STATUS[code];
  return new GraphQLError(message, {
    extensions: { code, ...extensions, ...(status ? { http: { status } } : {}) },
  });
}

export const notFound = (what: string, id: string) => apiError(ErrorCode.NOT_FOUND, `${what} ${id} does not exist.`);

/**
 * A call refused because what it names is another partner's. The caller gets exactly the answer it
 * would get if the object did not exist (NOT_FOUND), so it learns nothing of other partners; the
 * audit row (access.ts) records the truth: FORBIDDEN, without the call's arguments.
 */
export class Refusal extends GraphQLError {
  constructor(what: string, id: string) {
    super(`${what} ${id} does not exist.`, { extensions: { code: ErrorCode.NOT_FOUND } });
  }
}

/** How long a client is asked to wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 1;

/** HTTP 429 with Retry-After: a rate limit (the key's, or the address's failed authentications). */
export function rateLimited(retryAfterSeconds: number, message: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: ErrorCode.RATE_LIMITED,
      retryAfterSeconds,
      http: { status: 429, headers: new Map([['retry-after', String(retryAfterSeconds)]]) },
    },
  });
}

/**
 * HTTP 400 without Retry-After: the operation costs more than the key's whole allowance. Not a 429:
 * waiting never helps, and clients retry a 429 on their own.
 */
export function costExceedsAllowance(points: number, allowance: number): GraphQLError {
  return new GraphQLError(
    `This operation is charged ${points} points, more than this API key can ever spend at once (${allowance}): it will never run for this key. Ask for smaller pages (first) or fewer fields, or for a higher rate limit.`,
    { extensions: { code: ErrorCode.COST_EXCEEDS_ALLOWANCE, points, allowance, http: { status: 400 } } },
  );
}

/** HTTP 503 with Retry-After: the database is busy or unreachable. Nothing was done; retrying is safe. */
export function unavailable(message = 'The database is busy or unreachable; retry shortly.'): GraphQLError {
  return new GraphQLError(message, {
    extensions: {
      code: ErrorCode.UNAVAILABLE,
      retryable: true,
      http: { status: 503, headers: new Map([['retry-after', String(RETRY_AFTER_SECONDS)]]) },
    },
  });
}

/** A validation failure; becomes INVALID_INPUT in a claim payload or BAD_USER_INPUT elsewhere. */
export class InvalidInput extends Error {
  override name = 'InvalidInput';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
  toGraphQLError(): GraphQLError {
    return apiError(ErrorCode.BAD_USER_INPUT, this.message, { field: this.field });
  }
}

export interface ClaimError {
  code: ClaimErrorCode;
  message: string;
}

export const CLAIM_MESSAGES: Record<ClaimErrorCode, string> = {
  SOLD_OUT: 'The campaign is sold out: no ticket is available and none is held.',
  ALL_HELD: 'No ticket is available now, but held tickets (or tickets other claims are taking) may return to the pool: retry later.',
  CAMPAIGN_NOT_FOUND: 'No campaign has this id.',
  CAMPAIGN_NOT_OPEN: 'The campaign is not open for claims (draft, closed, or outside its opensAt/closesAt window).',
  HOLDER_LIMIT_REACHED: "This holder already has the campaign's perHolderLimit of live allocations from this partner.",
  IDEMPOTENCY_KEY_REUSED: 'This idempotency key was already used for a different request.',
  INVALID_INPUT: 'The input is invalid.',
  ALLOCATION_NOT_FOUND: 'No allocation of yours has this id.',
  HOLD_EXPIRED: 'The hold expired and its ticket went back to the pool.',
  NOT_HELD: 'The allocation is not held.',
  PARTNER_QUOTA_REACHED: "The partner's quota in this campaign is reached.",
  INSUFFICIENT_TICKETS: 'Fewer tickets are available than the quantity asked; nothing was allocated.',
  HOLD_EXTENSION_LIMIT: "The hold would last past its creation plus the campaign's maxHoldSeconds — or, for a waitlist offer or a ballot win, plus its window (waitlistOfferSeconds, ballotConfirmSeconds); it was not extended.",
  ALL_ALLOTTED: 'Nothing is available to this partner now; tickets allotted to other partners may return when their allotments lapse.',
  NOT_SOLD_OUT: 'A ticket is available to this partner: claim it instead of joining the waitlist.',
  NOT_WAITLISTED: 'The entry is no longer waiting or offered.',
  ALREADY_ENTERED: 'This holder already has a live entry here.',
  ENTRY_NOT_FOUND: 'No entry of yours has this id.',
  ENTRIES_CLOSED: 'Entries are closed: the ballot was drawn, or entriesCloseAt has passed.',
};

/**
 * CAMPAIGN_NOT_OPEN's message on a BALLOT campaign, whatever its status or window: it never takes a
 * claim or a hold (the contract keeps the code; the message says what to do instead).
 */
export const BALLOT_CLAIM_MESSAGE =
  'This campaign gives its tickets by ballot: it takes no claims or holds. Enter the ballot with enterBallot while the campaign is open and before entriesCloseAt; winners get holds to confirm with confirmHold.';

/**
 * SOLD_OUT's message on a WAITLIST_FIRST campaign: a holder who is refused can still get a ticket
 * there, by joining the waitlist (the code stays SOLD_OUT; the message says what to do instead).
 */
export const WAITLIST_SOLD_OUT_MESSAGE =
  'The campaign is sold out: no ticket is available and none is held. It has a waitlist: join it with joinWaitlist, and returned tickets are offered to waiting holders in the order they joined.';

export function claimError(code: ClaimErrorCode, message = CLAIM_MESSAGES[code]): ClaimError {
  return { code, message };
}
