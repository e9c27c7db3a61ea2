// Partner webhooks, the API's side: endpoints (create, list, delete) and their deliveries (read,
// send again). Delivery itself is the dispatcher's (webhooks/dispatcher.ts).
//
// Who may touch what: the admin key every endpoint; a partner key its own. A partner naming another
// partner's endpoint, delivery or partner id is answered exactly as if it did not exist (NOT_FOUND,
// a Refusal: errors.ts), so it learns nothing of other partners; the audit log records the refusal.
import { OPERATOR_PARTNER_ID } from '../auth';
import type { Config } from '../config';
import type { Database } from '../db/client';
import { createWebhookEndpoint } from '../db/createWebhookEndpoint';
import { deleteWebhookEndpoint } from '../db/deleteWebhookEndpoint';
import { countWebhookDeliveries, findWebhookDeliveryPage } from '../db/findWebhookDeliveries';
import { redeliverWebhook } from '../db/redeliverWebhook';
import { toDelivery, toEndpoint } from '../db/webhookRows';
import { apiError, ErrorCode, InvalidInput, notFound, Refusal } from '../errors';
import type { CreateWebhookInput, DeliveryStatus, WebhookEvent } from '../generated/graphql';
import type { ConnectionModel, WebhookDeliveryModel, WebhookEndpointModel } from '../models';
import * as validate from '../validation';
import { sealSecret } from '../webhooks/secrets';
import { newWebhookSecret } from '../webhooks/signature';
import { deliveryCursor } from './cursors';
import type { RequestContext } from './requestContext';

export type WebhookOptions = Config['webhooks'];

/** Tests and tools that build services without a configuration: no key, so no endpoint can be created. */
export const NO_WEBHOOK_CONFIG: WebhookOptions = { secretKey: undefined, allowPrivateNetworks: false, production: false };

const ENDPOINT_FIELDS = { id: true, partnerId: true, url: true, events: true, enabled: true, test: true, createdAt: true } as const;

/** The partner and mode a viewer is limited to (a partner's live or test key); null for the admin (every endpoint). */
const ownerScope = (ctx: RequestContext): { partnerId: string; test: boolean } | null =>
  ctx.viewer.kind === 'partner' ? { partnerId: ctx.viewer.partnerId, test: ctx.viewer.test } : null;

export class WebhookService {
  constructor(
    private readonly db: Database,
    private readonly options: WebhookOptions = NO_WEBHOOK_CONFIG,
  ) {}

  /** A new endpoint and its secret, which is returned here once and stored only sealed. */
  async create(ctx: RequestContext, input: CreateWebhookInput): Promise<{ endpoint: WebhookEndpointModel; secret: string }> {
    const partnerId = await this.ownerFor(ctx, input.partnerId);
    // A partner key makes endpoints of its own mode; an operator chooses (live unless test: true).
    if (ctx.viewer.kind === 'partner' && input.test !== null && input.test !== undefined && input.test !== ctx.viewer.test) {
      throw new InvalidInput('test', `A ${ctx.viewer.test ? 'test' : 'live'} key makes ${ctx.viewer.test ? 'test' : 'live'} endpoints: leave test out.`);
    }
    const test = ctx.viewer.kind === 'partner' ? ctx.viewer.test : input.test === true;
    const key = this.options.secretKey;
    if (!key) {
      throw apiError(
        ErrorCode.NOT_CONFIGURED,
        'Webhooks need WEBHOOK_SECRET_KEY, and this server was started without it (production never generates one): it cannot store an endpoint secret. Existing endpoints and deliveries can still be read.',
      );
    }
    const url = validate.webhookUrl(input.url, { production: this.options.production, allowPrivate: this.options.allowPrivateNetworks });
    const events = validate.webhookEvents(input.events);
    const secret = newWebhookSecret();
    const limit = validate.LIMITS.webhooksPerOwner;
    const row = await createWebhookEndpoint(this.db.prisma, { partnerId, test, url, events, secretSealed: sealSecret(secret, key), limit });
    if (!row) {
      const owner = partnerId === null ? 'The operator' : `Partner ${partnerId}`;
      throw apiError(ErrorCode.LIMIT_REACHED, `${owner} already has ${limit} ${test ? 'test' : 'live'} webhook endpoints; delete one first.`, { limit });
    }
    return { endpoint: toEndpoint(row), secret };
  }

  /** Soft delete; its pending deliveries become FAILED. Unknown, deleted or another partner's: NOT_FOUND. */
  async delete(ctx: RequestContext, id: string): Promise<boolean> {
    if (!validate.isUuid(id)) throw notFound('Webhook endpoint', id);
    if (await deleteWebhookEndpoint(this.db.prisma, id.toLowerCase(), ownerScope(ctx))) return true;
    // Nothing deleted: say why only in the audit log (a Refusal when it is another partner's).
    await this.requireEndpoint(ctx, id);
    throw notFound('Webhook endpoint', id);
  }

  /** Every endpoint not deleted (admin), or the partner's own of its key's mode; oldest first. */
  async list(ctx: RequestContext): Promise<WebhookEndpointModel[]> {
    const owner = ownerScope(ctx);
    const rows = await this.db.prisma.webhookEndpoint.findMany({
      where: { deletedAt: null, ...(owner ?? {}) },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      select: ENDPOINT_FIELDS,
    });
    return rows.map((r) => ({ ...r, events: r.events as WebhookEvent[] }));
  }

  /** An endpoint's deliveries, newest first; a deleted endpoint's too (its history is kept). */
  async deliveries(
    ctx: RequestContext,
    args: { endpointId: string; first?: number | null; after?: string | null; status?: DeliveryStatus | null },
  ): Promise<ConnectionModel<WebhookDeliveryModel>> {
    const limit = validate.pageSize(args.first);
    const after = args.after ? deliveryCursor.decode(args.after) : null;
    const endpoint = await this.requireEndpoint(ctx, args.endpointId);
    const status = args.status ?? null;
    const rows = await findWebhookDeliveryPage(this.db.prisma, { endpointId: endpoint.id, status, after, limit });
    const edges = rows.slice(0, limit).map((r) => ({ node: toDelivery(r), cursor: deliveryCursor.encode({ createdAt: r.created_at_text, id: r.id }) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => countWebhookDeliveries(this.db.prisma, endpoint.id, status),
    };
  }

  /** The delivery PENDING again and due now, with the same event id and body. */
  async redeliver(ctx: RequestContext, deliveryId: string): Promise<WebhookDeliveryModel> {
    if (!validate.isUuid(deliveryId)) throw notFound('Webhook delivery', deliveryId);
    const id = deliveryId.toLowerCase();
    const found = await this.db.prisma.webhookDelivery.findUnique({
      where: { id },
      select: { endpoint: { select: { partnerId: true, test: true, deletedAt: true } } },
    });
    if (!found) throw notFound('Webhook delivery', deliveryId);
    this.checkOwner(ctx, found.endpoint, 'Webhook delivery', deliveryId);
    const row = found.endpoint.deletedAt === null ? await redeliverWebhook(this.db.prisma, id) : null;
    // Deleted before, or while this ran (redeliverWebhook.ts): its deliveries are never sent again.
    if (!row) throw apiError(ErrorCode.INVALID_TRANSITION, `Webhook delivery ${deliveryId} cannot be sent again: its endpoint was deleted.`);
    return toDelivery(row);
  }

  /**
   * Whose endpoint createWebhook makes: a partner's own (partnerId left out, or its own id); the
   * admin's choice of an existing partner, or null for an operator endpoint.
   */
  private async ownerFor(ctx: RequestContext, partnerId: string | null | undefined): Promise<string | null> {
    const given = partnerId ?? null;
    if (ctx.viewer.kind === 'partner') {
      // Any other id, existing or not, gets the answer an unknown partner gets — without a look-up.
      if (given !== null && given.toLowerCase() !== ctx.viewer.partnerId) throw new Refusal('Partner', given);
      return ctx.viewer.partnerId;
    }
    if (given === null) return null;
    // The operator's own partner row (auth.ts) is not a partner one can name: null is the operator.
    if (!validate.isUuid(given) || given.toLowerCase() === OPERATOR_PARTNER_ID || (await ctx.loaders.partner.load(given.toLowerCase())) === null) {
      throw notFound('Partner', given);
    }
    return given.toLowerCase();
  }

  /** The endpoint (deleted ones too) if the viewer may see it; NOT_FOUND otherwise. */
  private async requireEndpoint(ctx: RequestContext, endpointId: string): Promise<{ id: string }> {
    if (!validate.isUuid(endpointId)) throw notFound('Webhook endpoint', endpointId);
    const endpoint = await this.db.prisma.webhookEndpoint.findUnique({ where: { id: endpointId.toLowerCase() }, select: { id: true, partnerId: true, test: true } });
    if (!endpoint) throw notFound('Webhook endpoint', endpointId);
    this.checkOwner(ctx, endpoint, 'Webhook endpoint', endpointId);
    return endpoint;
  }

  /** Another partner's endpoint, or one of the other mode (a live key's view of a test endpoint): a Refusal, answered NOT_FOUND. */
  private checkOwner(ctx: RequestContext, endpoint: { partnerId: string | null; test: boolean }, what: string, id: string): void {
    if (ctx.viewer.kind === 'partner' && (endpoint.partnerId !== ctx.viewer.partnerId || endpoint.test !== ctx.viewer.test)) throw new Refusal(what, id);
  }
}
