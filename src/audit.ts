// The audit log: every call of an admin mutation, and every webhook change a partner or the admin
// makes (@audited) — who, what, when, outcome — appended to `audit_log` by the field's own resolver
// (access.ts) before the answer is sent, on every transport, and readable by admins
// (Query.auditLog). Refused calls are recorded too (outcome FORBIDDEN, without their arguments): a
// partner trying an admin mutation, or another partner's webhook endpoint. Append-only: nothing
// updates or deletes a row.
import type { Database } from './db/client';
import type { JsonValue } from './db/json';
import type { Logger } from './logger';
import type { AuditEntryModel, ConnectionModel } from './models';
import * as validate from './validation';
import { auditCursor } from './services/cursors';
import type { RequestContext } from './services/requestContext';

export interface AuditRecord {
  /**
   * `admin` (ADMIN_API_KEY), `operator:<key id>` (an operator key), or `partner:<id>`: the partner
   * that made a change of its own (@audited) or tried one it may not.
   */
  actor: string;
  /** The operator key that acted; null for ADMIN_API_KEY and partners. */
  operatorId: string | null;
  operation: string;
  /** Summarised (auditArguments.ts); `{}` for a refused call. */
  arguments: { [key: string]: JsonValue };
  /** OK, or the error code the call ended with. */
  outcome: string;
  /** The server's own request id. */
  requestId: string;
  /** The client's x-request-id, when it sent a well-formed one. */
  clientRequestId: string | null;
  /** Test mode acted: a partner's test key, or a call naming a test campaign (access.ts). */
  test: boolean;
}

export class AuditService {
  constructor(
    private readonly db: Database,
    private readonly logger?: Logger,
  ) {}

  /**
   * Appends one row. A failed write is logged with the whole record and does not fail the call it
   * records (that call has already happened); the log line is then the audit trail.
   */
  async record(entry: AuditRecord): Promise<void> {
    try {
      await this.db.prisma.auditEntry.create({ data: entry, select: { id: true } });
    } catch (err) {
      this.logger?.error({ err, audit: entry }, 'audit log write failed');
    }
  }

  /** Newest first, optionally only one operation, outcome or actor, or a time range (since inclusive, until exclusive). */
  async list(_ctx: RequestContext, args: AuditLogArgs): Promise<ConnectionModel<AuditEntryModel>> {
    const limit = validate.pageSize(args.first);
    const before = args.after ? auditCursor.decode(args.after) : null;
    const since = validate.date('since', args.since);
    const until = validate.date('until', args.until);
    const where = {
      ...(args.operation ? { operation: validate.text('operation', args.operation, 100) } : {}),
      ...(args.outcome ? { outcome: validate.text('outcome', args.outcome, 100) } : {}),
      ...(args.actor ? { actor: validate.text('actor', args.actor, 100) } : {}),
      ...(since || until ? { at: { ...(since ? { gte: since } : {}), ...(until ? { lt: until } : {}) } } : {}),
    };
    const db = this.db.read().prisma; // a report: a replica may serve it
    const rows = await db.auditEntry.findMany({
      where: before === null ? where : { ...where, id: { lt: before } },
      orderBy: { id: 'desc' },
      take: limit + 1,
    });
    const page = rows.slice(0, limit).map((r) => ({
      id: String(r.id),
      at: r.at,
      actor: r.actor,
      operatorId: r.operatorId,
      operation: r.operation,
      arguments: r.arguments as JsonValue,
      outcome: r.outcome,
      requestId: r.requestId,
      test: r.test,
    }));
    const edges = page.map((node) => ({ node, cursor: auditCursor.encode(node.id) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => db.auditEntry.count({ where }),
    };
  }
}

export interface AuditLogArgs {
  first?: number | null;
  after?: string | null;
  operation?: string | null;
  outcome?: string | null;
  actor?: string | null;
  since?: Date | null;
  until?: Date | null;
}
