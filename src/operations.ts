// The controls every GraphQL operation passes, whatever transport brought it: written once, here,
// and used by HTTP (Apollo's options in server.ts, its plugin in plugins/) and WebSocket (ws.ts)
// alike. A third transport takes the same object:
//   parse     graphql-js's parser with the token limit
//   validate  the specified rules, graphql-armor's limits (depth, aliases, cost, directives) and,
//             when introspection is off, no __schema/__type
//   admit     the caller's rate limit, by what the operation costs with its fragments expanded and
//             @skip/@include honoured
//   record    one log line and the error metrics per operation
// Authorization and the audit belong to the fields themselves (access.ts); error masking to
// formatError.ts. The transports only carry bytes.
import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  BREAK,
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  visit,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { collectFields } from 'graphql/execution/collectFields';
import type { Viewer } from './auth';
import { rateLimited } from './errors';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { OPERATION_COSTS, type RateLimits } from './rateLimit';

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
}

export interface OperationControls {
  readonly validationRules: readonly ValidationRule[];
  readonly maxTokens: number;
  /** Parses a document as Apollo does (GRAPHQL_PARSE_FAILED on a syntax error or too many tokens). */
  parse(query: string): DocumentNode;
  /** The validation errors, coded GRAPHQL_VALIDATION_FAILED as Apollo codes them. */
  validate(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[];
  /** Charges the operation to the partner's rate limit; throws RATE_LIMITED when it is spent. */
  admit(viewer: Viewer | undefined, schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): Promise<void>;
  record(entry: OperationRecord): void;
}

export function createOperationControls(options: { limits: DocumentLimits; rateLimits: RateLimits; logger: Logger; metrics: Metrics }): OperationControls {
  const { limits, rateLimits, logger, metrics } = options;
  // Abusive documents are refused before they run (depth, aliases — 200 aliased claims allocate
  // nothing —, cost, directives). Tokens are limited by graphql-js's own parser (parse below):
  // armor's token plugin re-parses in a hook, where a plain syntax error becomes a 500. Field
  // suggestions are masked by formatError, for every transport.
  const armor = new ApolloArmor({
    maxDepth: { n: limits.maxDepth, ignoreIntrospection: true },
    maxAliases: { n: limits.maxAliases },
    costLimit: { maxCost: limits.maxCost, ignoreIntrospection: true },
    maxTokens: { enabled: false },
    maxDirectives: { n: 50 },
    blockFieldSuggestion: { enabled: false },
  }).protect();
  const validationRules = [...armor.validationRules, ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule])];
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
    async admit(viewer, schema, document, operation, variables) {
      // Every issued key has a budget: a partner's (its own rate limit, or the default) and an
      // operator key's (the default; its id never collides with a partner's). ADMIN_API_KEY has none.
      const key = viewer?.kind === 'partner' ? viewer.partnerId : viewer?.operator?.id;
      if (!key) return;
      const limit = viewer?.kind === 'partner' ? viewer.rateLimit : null;
      const verdict = await rateLimits.consume(key, cachedOperationCost(schema, document, operation, variables), limit);
      if (!verdict.allowed) throw rateLimited(verdict.retryAfterSeconds, 'This API key has used its rate limit; retry after the given seconds.');
    },
    record(entry) {
      for (const code of entry.codes) metrics.graphqlErrors.inc({ code });
      if (!logger.isLevelEnabled('info')) return;
      logger.info(
        {
          transport: entry.transport,
          requestId: entry.requestId,
          ...(entry.clientRequestId ? { clientRequestId: entry.clientRequestId } : {}),
          viewer: entry.viewer?.kind,
          partnerId: entry.viewer?.kind === 'partner' ? entry.viewer.partnerId : undefined,
          operatorId: entry.viewer?.kind === 'admin' ? entry.viewer.operator?.id : undefined,
          operation: entry.operationName ?? undefined,
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

/**
 * Operations whose cost does not depend on their variables, with that cost. Apollo hands every
 * request of one query text the same parsed document (its document cache), so the cost of an
 * operation is worked out once — unless an @skip or @include there takes its `if` from a variable,
 * when it is worked out for every request (`operationCost`).
 */
const fixedCosts = new WeakMap<OperationDefinitionNode, number>();

/** Whether an @skip or @include in the document takes its condition from a variable. */
function skipsByVariable(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if ((node.name.value === 'skip' || node.name.value === 'include') && node.arguments?.some((a) => a.value.kind !== Kind.BOOLEAN)) {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/** operationCost, remembered per operation when its variables cannot change it. */
export function cachedOperationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): number {
  const known = fixedCosts.get(operation);
  if (known !== undefined) return known;
  const cost = operationCost(schema, document, operation, variables);
  if (!skipsByVariable(document)) fixedCosts.set(operation, cost);
  return cost;
}

/**
 * What an operation costs in rate-limit points: the sum over the root fields it would execute —
 * fragments and inline fragments expanded, @skip/@include honoured, every alias counted (so fifteen
 * aliased claims in a fragment cost fifteen claims).
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): number {
  const root = operation.operation === 'mutation' ? schema.getMutationType() : operation.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
  if (!root) return 1;
  const fragments = Object.fromEntries(
    document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
  );
  let cost = 0;
  for (const nodes of collectFields(schema, fragments, variables, root, operation.selectionSet).values()) {
    cost += OPERATION_COSTS[nodes[0]!.name.value] ?? 1;
  }
  return Math.max(cost, 1);
}

/** The operation a request names (or its only one), as graphql-js's execute picks it. */
export function selectOperation(document: DocumentNode, operationName: string | null | undefined): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operationName) return operations.find((o) => o.name?.value === operationName);
  return operations.length === 1 ? operations[0] : undefined;
}

export const NOT_OVER_HTTP = 'Subscriptions are served over graphql-ws (a WebSocket on /graphql), not over HTTP POST.';
export const NOT_OVER_WS = 'Only subscriptions are served over the WebSocket: send queries and mutations with HTTP POST /graphql.';
