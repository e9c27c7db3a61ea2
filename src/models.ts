// The shapes services return and resolvers receive (codegen maps the GraphQL types onto them).
import type { JsonValue } from './db/json';
import type { DeliveryStatus, WebhookEvent } from './generated/graphql';

export type CampaignStatus = 'DRAFT' | 'OPEN' | 'CLOSED';
export type TicketStatus = 'AVAILABLE' | 'HELD' | 'ALLOCATED' | 'VOID' | 'ALLOTTED';
export type ReleasePolicy = 'POOL' | 'WAITLIST_FIRST' | 'VOID';
export type AllocationStatus = 'HELD' | 'ACTIVE' | 'RELEASED' | 'EXPIRED';
export type WaitlistStatus = 'WAITING' | 'OFFERED' | 'ACCEPTED' | 'EXPIRED' | 'LEFT';

export interface PartnerModel {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt?: Date | null;
  revokedAt?: Date | null;
  rateLimit?: number | null;
  /** With `campaignScope`: whether the key is limited to it (scopePartnerKey). */
  scoped?: boolean;
  campaignScope?: string[];
}

export type OperatorRole = 'OWNER' | 'OPERATOR' | 'VIEWER';

export interface OperatorKeyModel {
  id: string;
  name: string;
  role: OperatorRole;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface AuditEntryModel {
  id: string;
  at: Date;
  actor: string;
  operatorId: string | null;
  operation: string;
  arguments: import('./db/json').JsonValue;
  outcome: string;
  requestId: string | null;
  test: boolean;
}

export interface CampaignModel {
  id: string;
  name: string;
  status: CampaignStatus;
  opensAt: Date | null;
  closesAt: Date | null;
  perHolderLimit: number | null;
  /** Absent where a statement returned the campaign without them (the claims): the resolvers read them. */
  lowStockThreshold?: number | null;
  maxHoldSeconds?: number | null;
  releasePolicy?: ReleasePolicy;
  waitlistOfferSeconds?: number;
  mode?: CampaignMode;
  entriesCloseAt?: Date | null;
  ballotConfirmSeconds?: number | null;
  createdAt: Date;
}

export interface CampaignStatsModel {
  total: number;
  allocated: number;
  held: number;
  available: number;
  allotted: number;
  void: number;
  fillRate: number;
  /** Sold out now (the definition: prisma/functions/tessera_sold_out.sql). */
  soldOut: boolean;
  /** When it first sold out. */
  soldOutAt: Date | null;
}

export interface TimelinePointModel {
  at: Date;
  allocated: number;
  cumulative: number;
  refused: number;
  refusals: { code: import('./generated/graphql').ClaimErrorCode; count: number }[];
}

/** A partner's allotment in a campaign (src/db/allotments.ts). */
export interface AllotmentModel {
  campaignId: string;
  partnerId: string;
  size: number;
  used: number;
  remaining: number;
  lapsesAt: Date | null;
  lapsedAt: Date | null;
}

/** A waitlist entry (src/db/waitlist.ts). */
export interface WaitlistEntryModel {
  id: string;
  campaignId: string;
  partnerId: string;
  holder: string;
  quantity: number;
  status: WaitlistStatus;
  /** Join order. */
  seq: number;
  /** The 1-based rank among the campaign's WAITING entries; null unless WAITING. */
  position: number | null;
  createdAt: Date;
  offeredAt: Date | null;
  endedAt: Date | null;
}

export interface PartnerStatsModel {
  partnerId: string;
  allocated: number;
  held: number;
  quota: number | null;
}

export interface TicketModel {
  campaignId: string;
  /** bigint in the database, a decimal string here and in the API. */
  id: string;
  code: string;
  status: TicketStatus;
}

export interface AllocationModel {
  id: string;
  campaignId: string;
  ticketId: string;
  partnerId: string;
  holder: string;
  metadata: JsonValue | null;
  idempotencyKey: string | null;
  status: AllocationStatus;
  sequence: number;
  allocatedAt: Date;
  expiresAt: Date | null;
  releasedAt: Date | null;
  /** Set when a hold was confirmed (not in the API). */
  confirmedAt: Date | null;
}

export interface WebhookEndpointModel {
  id: string;
  /** null: an operator endpoint (every event). */
  partnerId: string | null;
  url: string;
  events: WebhookEvent[];
  enabled: boolean;
  /** A test endpoint: test campaigns' events only. */
  test: boolean;
  createdAt: Date;
}

export interface WebhookDeliveryModel {
  id: string;
  eventId: string;
  event: WebhookEvent;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** null unless PENDING. */
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

export interface ConnectionModel<T> {
  edges: { node: T; cursor: string }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  /** Counted only when the client asks for it. */
  totalCount: () => Promise<number>;
}

export type CampaignMode = 'FIRST_COME' | 'BALLOT';
export type BallotEntryStatus = 'ENTERED' | 'WON' | 'LOST' | 'LAPSED' | 'WITHDRAWN';

export interface BallotEntryModel {
  id: string;
  campaignId: string;
  partnerId: string;
  holder: string;
  quantity: number;
  status: BallotEntryStatus;
  seq: number;
  rank: number | null;
  wonInDraw: boolean | null;
  createdAt: Date;
}

export interface BallotModel {
  campaignId: string;
  seedCommitment: string;
  seed: string | null;
  entriesDigest: string | null;
  /** Before the draw: the entries ENTERED now; after it: the entries drawn. */
  entryCount: number;
  winners: number;
  tickets: number | null;
  partnerLimits: Record<string, { allotted?: number; quota?: number }> | null;
  drawnAt: Date | null;
}

/** Who is calling (auth.ts), as `Query.viewer` answers it. */
export type ViewerModel = import('./auth').Viewer;

/** verifyCampaign / repairCampaign (src/db/verifyCampaign.ts). */
export interface CampaignVerificationModel {
  campaign: CampaignModel;
  checkedAt: Date;
  ok: boolean;
  drifts: import('./db/verifyCampaign').Drift[];
  repaired: import('./db/verifyCampaign').Drift[];
}
