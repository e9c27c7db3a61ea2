// Per operation: who is calling, the operation's loaders, and the services.
import { AuditService } from './audit';
import { authenticate, type Authenticator } from './auth';
import type { Config } from './config';
import type { Database } from './db/client';
import { createLoaders } from './loaders';
import type { LiveUpdates } from './live';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { AllocationService } from './claim/service';
import { BallotService } from './services/ballots';
import { AllocationRecordService } from './services/allocationRecords';
import { ClaimBatcher } from './claim/batcher';
import { CampaignService } from './services/campaigns';
import { CampaignQuotaService } from './services/campaignQuotas';
import { CampaignRepairService } from './services/campaignRepair';
import { CampaignReportService } from './services/campaignReports';
import { CampaignTestModeService } from './services/campaignTestMode';
import { OperatorKeyService } from './services/operatorKeys';
import { PartnerService } from './services/partners';
import { RefusalCounter } from './services/refusalCounter';
import type { RequestContext } from './services/requestContext';
import type { Span } from './tracing';
import { WaitlistService } from './services/waitlist';
import { WebhookService } from './services/webhooks';

export interface Services {
  readonly allocations: AllocationService;
  readonly allocationRecords: AllocationRecordService;
  readonly campaigns: CampaignService;
  readonly campaignTestMode: CampaignTestModeService;
  readonly campaignQuotas: CampaignQuotaService;
  readonly campaignReports: CampaignReportService;
  readonly campaignRepair: CampaignRepairService;
  readonly partners: PartnerService;
  readonly operatorKeys: OperatorKeyService;
  /** Finds the record behind a key: ADMIN_API_KEY, a partner's or an operator's (auth.ts). */
  readonly keys: Authenticator;
  readonly audit: AuditService;
  readonly webhooks: WebhookService;
  readonly waitlist: WaitlistService;
  readonly ballots: BallotService;
  /** Claim refusals per campaign and minute, written every few seconds (started and stopped by the server). */
  readonly refusals: RefusalCounter;
}

export interface Context extends RequestContext {
  readonly services: Services;
  readonly db: Database;
  readonly live: LiveUpdates;
}

/** One operation's context, whatever transport brought it. */
export interface OperationContext extends Context {
  /** The server's own id for this operation (logs, audit rows, INTERNAL_SERVER_ERROR answers). */
  readonly requestId: string;
  /** The client's x-request-id, when it sent a well-formed one: kept beside ours, never instead. */
  readonly clientRequestId?: string;
  /** When the operation began (performance.now()), before its key was checked: the log's `ms` counts from here. */
  readonly started: number;
}

export function createServices(
  db: Database,
  options: {
    adminApiKey: string;
    apiKeyCacheTtlMs?: number;
    claimBatchMax?: number;
    claimStatementsInFlight?: number;
    metrics?: Metrics;
    live?: LiveUpdates;
    logger?: Logger;
    onError?: (error: unknown) => void;
    /** Left out (tests, tools): no secret key, so createWebhook refuses; reads work. */
    webhooks?: Config['webhooks'];
  },
): Services {
  const batcher = new ClaimBatcher(db, {
    maxBatch: options.claimBatchMax ?? 1,
    // Claim statements at once from this process: beyond this many, claims wait and go together.
    // Each has its fixed costs (a round trip, the executor's start, a commit), so fewer in flight
    // with more claims each does more: 2 in flight served 5.5–6.0k hot claims/s here against
    // 4.4–4.6k with 5 (half the pool), and spread 4.7k against 3.9k. Never more than half the pool:
    // the rest is for reads and second looks.
    maxInFlight: Math.max(1, Math.min(options.claimStatementsInFlight ?? 2, Math.floor(db.options.poolSize / 2))),
    // Where the dialect groups per campaign, each campaign has maxInFlight, within half the pool in all.
    maxInFlightTotal: Math.max(1, Math.floor(db.options.poolSize / 2)),
    maxWaitMs: db.options.poolTimeoutMs,
    maxWaiting: db.options.poolMaxWaiting,
    onBatch: (size) => options.metrics?.batchSize.observe(size),
  });
  const refusals = new RefusalCounter(db, options.onError);
  const partners = new PartnerService(db, options.apiKeyCacheTtlMs, options.onError, options.live);
  const operatorKeys = new OperatorKeyService(db, options.apiKeyCacheTtlMs, options.onError, options.live);
  const campaigns = new CampaignService(db, options.live, options.webhooks?.secretKey, options.logger);
  return {
    allocations: new AllocationService(db, batcher, options.metrics, options.live, refusals),
    refusals,
    allocationRecords: new AllocationRecordService(db, options.live),
    campaigns,
    campaignTestMode: new CampaignTestModeService(db, campaigns, options.live),
    campaignQuotas: new CampaignQuotaService(db, options.live),
    campaignReports: new CampaignReportService(db),
    campaignRepair: new CampaignRepairService(db, options.live),
    ballots: new BallotService(db, options.webhooks?.secretKey, options.live),
    partners,
    operatorKeys,
    keys: {
      adminApiKey: options.adminApiKey,
      findPartnerByPrefix: (prefix) => partners.findPartnerByPrefix(prefix),
      findOperatorByPrefix: (prefix) => operatorKeys.findOperatorByPrefix(prefix),
    },
    audit: new AuditService(db, options.logger),
    webhooks: new WebhookService(db, options.webhooks),
    waitlist: new WaitlistService(db, options.live),
  };
}

/** One operation's context: who is calling (`authorization`), with its ids and start; throws UNAUTHENTICATED. */
export async function createContext(
  db: Database,
  services: Services,
  live: LiveUpdates,
  authorization: string | undefined,
  ids: { requestId: string; clientRequestId?: string; started: number; trace?: Span },
): Promise<OperationContext> {
  const viewer = await authenticate(authorization, services.keys);
  if (viewer.kind === 'partner') services.partners.touch(viewer);
  else if (viewer.operator) services.operatorKeys.touch(viewer.operator.id);
  // A partner's own partner (name, id) answers allocation.partner without a query; its other fields
  // load on demand (resolvers/Partner.ts). The loaders are made when first used (loaders.ts).
  const loaders = createLoaders(db, services, viewer.kind === 'partner' ? viewer.partner : undefined);
  const context: OperationContext = { viewer, loaders, services, db, live, requestId: ids.requestId, started: ids.started, ...(ids.trace ? { trace: ids.trace } : {}) };
  return ids.clientRequestId ? { ...context, clientRequestId: ids.clientRequestId } : context;
}
