// What a client sees of an error: unexpected errors are logged (by the operation log) with their
// cause and request id, and reach the client as INTERNAL_SERVER_ERROR with that id only — no stack,
// no SQL. Transient database trouble is UNAVAILABLE (retry); validation failures are BAD_USER_INPUT
// naming the field. Every transport formats its errors here.
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { isTransientDbError } from './db/pgErrors';
import { ErrorCode, InvalidInput } from './errors';
import type { Logger } from './logger';

/** Codes a client may see as they are; anything else is masked. */
const PUBLIC_CODES = new Set<string>([
  ...Object.values(ErrorCode),
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

/** The request id an error was tagged with (tagErrors), for the masked answer. */
export type TaggedError = GraphQLError & { requestId?: string };

/**
 * Before errors are formatted, on every transport: each is tagged with the request id, and an
 * unexpected one (not a GraphQLError of ours, not bad input) is logged with its cause. Answers
 * whether the database was the trouble (HTTP then answers 503 with Retry-After).
 */
export function tagErrors(errors: readonly GraphQLError[], requestId: string, logger: Logger): { transient: boolean } {
  let transient = false;
  for (const error of errors) {
    const original = unwrapResolverError(error);
    (error as TaggedError).requestId = requestId;
    if (isTransientDbError(original) || (original instanceof GraphQLError && original.extensions.code === ErrorCode.UNAVAILABLE)) transient = true;
    else if (!(original instanceof GraphQLError) && !(original instanceof InvalidInput)) {
      logger.error({ err: original, requestId, path: error.path }, 'unexpected error');
    }
  }
  return { transient };
}

/**
 * graphql-js's "Did you mean …?" hints (field names, argument names, enum values, types) describe
 * the schema; where introspection is off they would describe it anyway.
 */
const SUGGESTION = / ?Did you mean [^?]*\?/g;

export function createFormatError(options: { hideSuggestions: boolean }): (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError {
  if (!options.hideSuggestions) return formatError;
  return (formatted, error) => {
    const masked = formatError(formatted, error);
    return masked.message.includes('Did you mean') ? { ...masked, message: masked.message.replace(SUGGESTION, '') } : masked;
  };
}

function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = unwrapResolverError(error);
  const requestId = (error as TaggedError | undefined)?.requestId;
  if (original instanceof InvalidInput) {
    return { message: original.message, path: formatted.path, extensions: { code: ErrorCode.BAD_USER_INPUT, field: original.field } };
  }
  if (isTransientDbError(original)) {
    return {
      message: 'The database is busy or unreachable; retry shortly (claims with their idempotency key).',
      path: formatted.path,
      extensions: { code: ErrorCode.UNAVAILABLE, retryable: true },
    };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && PUBLIC_CODES.has(code) && code !== ErrorCode.INTERNAL_SERVER_ERROR) {
    const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
    return { ...formatted, extensions };
  }
  return {
    message: 'Internal server error',
    path: formatted.path,
    extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, ...(requestId ? { requestId } : {}) },
  };
}
