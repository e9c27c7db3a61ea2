// The controls every GraphQL operation passes, whatever transport brought it: written once, here,
// and used by HTTP (Apollo's options in server.ts, its plugin in plugins/) and WebSocket (ws.ts)
// alike. A third transport takes the same object:
//   parse     graphql-js's parser with the token limit
//   validate  the specified rules, graphql-armor's limits (depth, aliases, directives) and, when
//             introspection is off, no __schema/__type
//   measure   what the operation costs with the variables it will run with (cost.ts): over
//             GRAPHQL_MAX_COST it is refused
//   charge    the caller's rate limit charged what measure found
//   record    one log line and the error metrics per operation
// Authorization and the audit belong to the fields themselves (access.ts); error masking to
// formatError.ts. The transports only carry bytes.
import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import type { Viewer } from './auth';
import { measureOperation, type OperationMeasure } from './cost';
import { costExceedsAllowance, rateLimited } from './errors';
import { NoSkipOnSubscriptionRootRule } from './subscriptionRootRule';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { RateLimits } from './rateLimit';

export interface DocumentLimits {
  readonly maxDepth: number;
  readonly maxAliases: number;
  readonly maxCost: number;
  readonly maxTokens: number;
  readonly introspection: boolean;
}

export interface OperationRecord {
  readonly transport: 'http' | 'ws';
  readonly requestId: string;
  readonly clientRequestId?: string;
  readonly viewer?: Viewer;
  readonly operationName?: string | null;
  readonly type?: string;
  readonly status?: number;
  readonly ms: number;
  readonly codes: readonly string[];
  /** The operation's trace, when tracing is on: its log line names it. */
  readonly traceId?: string;
}

export interface OperationControls {
  readonly validationRules: readonly ValidationRule[];
  readonly maxTokens: number;
  /** Parses a document as Apollo does (GRAPHQL_PARSE_FAILED on a syntax error or too many tokens). */
  parse(query: string): DocumentNode;
  /** The validation errors, coded GRAPHQL_VALIDATION_FAILED as Apollo codes them. */
  validate(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[];
  /** What the operation costs with these variables; throws GRAPHQL_VALIDATION_FAILED over GRAPHQL_MAX_COST. */
  measure(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): OperationMeasure;
  /**
   * Charges what `measure` found to the key's rate limit; throws RATE_LIMITED when that is spent, and
   * COST_EXCEEDS_ALLOWANCE when the charge is more than the key can ever spend at once.
   */
  charge(viewer: Viewer | undefined, measured: OperationMeasure): Promise<void>;
  record(entry: OperationRecord): void;
}

export function createOperationControls(options: { limits: DocumentLimits; rateLimits: RateLimits; logger: Logger; metrics: Metrics }): OperationControls {
  const { limits, rateLimits, logger, metrics } = options;
  // Abusive documents are refused before they run (depth, aliases — 200 aliased claims allocate
  // nothing —, directives). Tokens are limited by graphql-js's own parser (parse below): armor's
  // token plugin re-parses in a hook, where a plain syntax error becomes a 500. The cost is not a
  // validation rule: it depends on the variables (measure, cost.ts). Field suggestions are masked
  // by formatError, for every transport.
  const armor = new ApolloArmor({
    maxDepth: { n: limits.maxDepth, ignoreIntrospection: true },
    maxAliases: { n: limits.maxAliases },
    costLimit: { enabled: false },
    maxTokens: { enabled: false },
    maxDirectives: { n: 50 },
    blockFieldSuggestion: { enabled: false },
  }).protect();
  const measure: OperationControls['measure'] = (schema, document, operation, variables) => {
    const measured = measureOperation(schema, document, operation, variables);
    if (measured.cost > limits.maxCost) {
      throw new GraphQLError(
        `The operation costs ${Math.ceil(measured.cost)}, over the limit of ${limits.maxCost}: ask for smaller pages (first) or fewer nested lists.`,
        { extensions: { code: 'GRAPHQL_VALIDATION_FAILED', cost: Math.ceil(measured.cost), maxCost: limits.maxCost, http: { status: 400 } } },
      );
    }
    return measured;
  };
  const validationRules = [NoSkipOnSubscriptionRootRule, ...armor.validationRules, ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule])];
  return {
    validationRules,
    maxTokens: limits.maxTokens,
    parse(query) {
      try {
        return parse(query, { maxTokens: limits.maxTokens });
      } catch (error) {
        throw new GraphQLError((error as Error).message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
      }
    },
    validate(schema, document) {
      return validate(schema, document, [...specifiedRules, ...validationRules]).map(
        (error) => new GraphQLError(error.message, { nodes: error.nodes, extensions: { ...error.extensions, code: 'GRAPHQL_VALIDATION_FAILED' } }),
      );
    },
    measure,
    async charge(viewer, { points }) {
      // Every issued key has a budget: a partner's (its own rate limit, or the default) and an
      // operator key's (the default; its id never collides with a partner's). ADMIN_API_KEY has none.
      const key = viewer?.kind === 'partner' ? viewer.partnerId : viewer?.operator?.id;
      if (!key) return;
      const limit = viewer?.kind === 'partner' ? viewer.rateLimit : null;
      const verdict = await rateLimits.consume(key, points, limit);
      if (verdict.allowed) return;
      if ('allowance' in verdict) throw costExceedsAllowance(points, verdict.allowance);
      throw rateLimited(verdict.retryAfterSeconds, 'This API key has used its rate limit; retry after the given seconds.');
    },
    record(entry) {
      for (const code of entry.codes) metrics.graphqlErrors.inc({ code });
      if (!logger.isLevelEnabled('info')) return;
      logger.info(
        {
          transport: entry.transport,
          requestId: entry.requestId,
          ...(entry.clientRequestId ? { clientRequestId: entry.clientRequestId } : {}),
          ...(entry.traceId ? { traceId: entry.traceId } : {}),
          viewer: entry.viewer?.kind,
          partnerId: entry.viewer?.kind === 'partner' ? entry.viewer.partnerId : undefined,
          operatorId: entry.viewer?.kind === 'admin' ? entry.viewer.operator?.id : undefined,
          operation: loggedName(entry.operationName),
          type: entry.type,
          status: entry.status,
          ms: Math.round(entry.ms * 10) / 10,
          ...(entry.codes.length ? { errors: entry.codes } : {}),
        },
        'graphql',
      );
    },
  };
}

/** The longest operation name a log line carries whole (a name is the client's, at any length the body allows). */
export const LOGGED_NAME_LENGTH = 100;

/** An operation's name for a log line: at most LOGGED_NAME_LENGTH characters, and how long it was when cut. */
export function loggedName(name: string | null | undefined): string | undefined {
  if (!name) return undefined;
  return name.length <= LOGGED_NAME_LENGTH ? name : `${name.slice(0, LOGGED_NAME_LENGTH)}… (${name.length} characters)`;
}

/** The operation a request names (or its only one), as graphql-js's execute picks it. */
export function selectOperation(document: DocumentNode, operationName: string | null | undefined): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operationName) return operations.find((o) => o.name?.value === operationName);
  return operations.length === 1 ? operations[0] : undefined;
}

export const NOT_OVER_HTTP = 'Subscriptions are served over graphql-ws (a WebSocket on /graphql), not over HTTP POST.';
export const NOT_OVER_WS = 'Only subscriptions are served over the WebSocket: send queries and mutations with HTTP POST /graphql.';
