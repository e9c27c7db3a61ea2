// The audit log: every admin mutation — who, what, when, outcome — appended to `audit_log` before
// the response is sent, and readable by admins (Query.auditLog). Partners trying an admin mutation
// are recorded too (outcome FORBIDDEN). Arguments are stored without secrets or bulk data.
import type { ApolloServerPlugin } from '@apollo/server';
import type { FieldNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { getArgumentValues } from 'graphql/execution/values';
import type { Context } from './context';
import type { Database } from './db/client';
import type { JsonValue } from './db/json';
import type { Logger } from './logger';
import type { AuditEntryModel, ConnectionModel } from './models';
import * as validate from './validation';
import { requireAdmin } from './auth';
import { auditCursor } from './services/cursors';
import type { RequestContext } from './services/requestContext';

export const ADMIN_MUTATIONS = new Set([
  'createPartner',
  'createCampaign',
  'loadTickets',
  'generateTickets',
  'openCampaign',
  'closeCampaign',
  'setPartnerQuota',
  'updateCampaign',
  'revokeApiKey',
  'rotateApiKey',
  'setPartnerRateLimit',
]);

/** Arguments as stored: bulk lists become their length. */
function sanitize(value: unknown): JsonValue {
  if (Array.isArray(value)) return value.length > 20 ? { count: value.length } : (value.map(sanitize) as JsonValue);
  if (value instanceof Date) return value.toISOString();
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, sanitize(v)]));
  }
  return (value ?? null) as JsonValue;
}

export function auditPlugin(db: Database, logger: Logger): ApolloServerPlugin<Context & { requestId: string }> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ contextValue, operation, request, response, schema }) {
          if (operation?.operation !== 'mutation' || !contextValue.viewer) return;
          const fields = rootFields(operation).filter((f) => ADMIN_MUTATIONS.has(f.name.value));
          if (fields.length === 0) return;
          const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
          const actor = contextValue.viewer.kind === 'admin' ? 'admin' : `partner:${contextValue.viewer.partnerId}`;
          const rows = fields.map((field) => {
            const responseKey = field.alias?.value ?? field.name.value;
            const error = body?.errors?.find((e) => e.path?.[0] === responseKey);
            return {
              actor,
              operation: field.name.value,
              arguments: argumentsOf(schema, field, request.variables ?? {}) as object,
              outcome: error ? String(error.extensions?.code ?? 'ERROR') : 'OK',
              requestId: contextValue.requestId,
            };
          });
          try {
            await db.prisma.auditEntry.createMany({ data: rows });
          } catch (err) {
            logger.error({ err, requestId: contextValue.requestId }, 'audit log write failed');
          }
        },
      };
    },
  };
}

function rootFields(operation: OperationDefinitionNode): FieldNode[] {
  return operation.selectionSet.selections.filter((s): s is FieldNode => s.kind === 'Field');
}

function argumentsOf(schema: GraphQLSchema, field: FieldNode, variables: Record<string, unknown>): JsonValue {
  const definition = schema.getMutationType()?.getFields()[field.name.value];
  if (!definition) return {};
  try {
    return sanitize(getArgumentValues(definition, field, variables));
  } catch {
    return { unreadable: true };
  }
}

export class AuditService {
  constructor(private readonly db: Database) {}

  async list(ctx: RequestContext, args: { first?: number | null; after?: string | null }): Promise<ConnectionModel<AuditEntryModel>> {
    requireAdmin(ctx.viewer);
    const limit = validate.pageSize(args.first);
    const before = args.after ? auditCursor.decode(args.after) : null;
    const rows = await this.db.prisma.auditEntry.findMany({
      where: before === null ? {} : { id: { lt: before } },
      orderBy: { id: 'desc' },
      take: limit + 1,
    });
    const page = rows.slice(0, limit).map((r) => ({
      id: String(r.id),
      at: r.at,
      actor: r.actor,
      operation: r.operation,
      arguments: r.arguments as JsonValue,
      outcome: r.outcome,
      requestId: r.requestId,
    }));
    const edges = page.map((node) => ({ node, cursor: auditCursor.encode(node.id) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => this.db.prisma.auditEntry.count(),
    };
  }
}
