// Who may call what, from one declaration: the `@requires(role: …)` and `@audited` directives in
// schema.graphql. When the schema is built, every field that carries one is wrapped here:
//   - @requires: the caller's role is checked before the field runs: FORBIDDEN otherwise;
//   - @audited: any caller with a key may run the field (it checks ownership itself), and it is
//     audited as below; @audited(partners: false) audits only the admin key's and operator keys'
//     calls (releaseAllocation: an operator acting on a partner's allocation is worth a row, a
//     partner acting on its own is recorded by the row it changes, as its claims are);
//   - a Mutation field that carries either is audited: one row per execution of the field, written
//     from what actually ran. Fragments are expanded and @skip/@include honoured, because the row is
//     written by the field's own resolver, on every transport. A refused call is recorded without
//     its arguments, as FORBIDDEN: refused for want of a role, by the field because the object is
//     another partner's (a Refusal, errors.ts — the caller is answered NOT_FOUND, the audit log
//     says what happened), or by the field with FORBIDDEN itself (a partner's test key resetting a
//     test campaign that other partners use: services/campaignTestMode.ts).
// Every other Mutation field (the partner operations, which check ownership themselves) is open to
// partners and to operators that may change things: a VIEWER key is refused every mutation
// (FORBIDDEN, audited), before anything else runs. Operator keys (OWNER, OPERATOR) act as the admin
// key does; the audit row names the key (operator_id).
// The list of these fields (accessRules) is what the tests walk, so a new field cannot be left out
// of them.
import { defaultFieldResolver, GraphQLError, isObjectType, type GraphQLFieldConfig, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Viewer } from './auth';
import type { OperatorRole } from './models';
import type { AuditRecord } from './audit';
import { apiError, ErrorCode, InvalidInput, Refusal } from './errors';
import { summarizeArguments } from './auditArguments';
import { isTestCampaignId } from './testMode';
import { isUuid } from './validation';

export type { OperatorRole };
const RANK: Record<OperatorRole, number> = { VIEWER: 1, OPERATOR: 2, OWNER: 3 };

export interface AccessRule {
  /** `Type.field` */
  readonly field: string;
  /** The role @requires asks for; null for @audited (any caller with a key). */
  readonly role: OperatorRole | null;
  /** Mutation fields are audited. */
  readonly audited: boolean;
  /**
   * Whether a partner's call that runs is audited too: false for @audited(partners: false). A call
   * refused for want of a role is audited whatever this says.
   */
  readonly auditsPartners: boolean;
}

/** What a wrapped resolver needs from the context. */
export interface AccessContext {
  readonly viewer: Viewer;
  readonly requestId: string;
  readonly clientRequestId?: string;
  readonly services: { readonly audit: { record(entry: AuditRecord): Promise<void> } };
}

/** The caller's role: the admin key is an OWNER, an operator key has its own; a partner key has none. */
export function roleOf(viewer: Viewer): OperatorRole | null {
  return viewer.kind === 'admin' ? viewer.role : null;
}

export function mayUse(viewer: Viewer, role: OperatorRole): boolean {
  const own = roleOf(viewer);
  return own !== null && RANK[own] >= RANK[role];
}

/** Every field that carries @requires (with its role) or @audited, in the schema's order. */
export function accessRules(schema: GraphQLSchema): AccessRule[] {
  const rules: AccessRule[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    const isMutation = type === schema.getMutationType();
    for (const field of Object.values(type.getFields())) {
      const name = `${type.name}.${field.name}`;
      const directives = field.astNode?.directives ?? [];
      const requires = directives.find((d) => d.name.value === 'requires');
      const audited = directives.find((d) => d.name.value === 'audited');
      if (requires && audited) throw new Error(`${name}: @requires already audits a Mutation field; drop @audited`);
      if (audited) {
        // A read is not audited, and a field open to every caller needs no rule at all.
        if (!isMutation) throw new Error(`${name}: @audited is for Mutation fields`);
        const partners = audited.arguments?.find((a) => a.name.value === 'partners')?.value;
        if (partners && partners.kind !== 'BooleanValue') throw new Error(`${name}: @audited(partners:) is true or false`);
        rules.push({ field: name, role: null, audited: true, auditsPartners: partners?.value ?? true });
        continue;
      }
      const role = requires?.arguments?.find((a) => a.name.value === 'role')?.value;
      if (!role) continue;
      if (role.kind !== 'EnumValue' || !(role.value in RANK)) throw new Error(`${name}: @requires needs an OperatorRole`);
      rules.push({ field: name, role: role.value as OperatorRole, audited: isMutation, auditsPartners: true });
    }
  }
  return rules;
}

const forbidden = (role: OperatorRole) => apiError(ErrorCode.FORBIDDEN, `This operation needs an operator key with the ${role} role (or the admin key).`);

/** The code an audited call ended with. */
function outcomeOf(error: unknown): string {
  if (error instanceof InvalidInput) return ErrorCode.BAD_USER_INPUT;
  if (error instanceof GraphQLError && typeof error.extensions.code === 'string') return error.extensions.code;
  return ErrorCode.INTERNAL_SERVER_ERROR;
}

/**
 * The outcome of a call that returned: an expected refusal comes back in the payload's `error` (a
 * ClaimError, e.g. ALLOCATION_NOT_FOUND), not as a GraphQL error, and is recorded as its code.
 */
function returnedOutcome(result: unknown): string {
  const error = (result as { error?: { code?: unknown } | null } | null | undefined)?.error;
  return typeof error?.code === 'string' ? error.code : 'OK';
}

/** `admin` (ADMIN_API_KEY), `operator:<key id>` or `partner:<id>`. */
const actorOf = (viewer: Viewer) => (viewer.kind === 'partner' ? `partner:${viewer.partnerId}` : viewer.operator ? `operator:${viewer.operator.id}` : 'admin');

/** The operations that act on test mode only, whatever they name. */
const TEST_OPERATIONS = new Set(['createTestCopy', 'advanceTestClock', 'resetTestCampaign', 'purgeTestData']);

/**
 * Whether test mode acted, for the audit row: a partner's test key, a test-mode operation, or a
 * call that names a test campaign — as campaignId or id, at the top or in its input
 * (createCampaign's input.test too).
 */
function testModeActed(viewer: Viewer, operation: string, args: Record<string, unknown>): boolean {
  if (viewer.kind === 'partner') return viewer.test;
  if (TEST_OPERATIONS.has(operation)) return true;
  const input = (typeof args.input === 'object' && args.input !== null ? args.input : {}) as Record<string, unknown>;
  if (input.test === true) return true;
  return [args.campaignId, args.id, input.campaignId].some((id) => typeof id === 'string' && isUuid(id) && isTestCampaignId(id));
}

/** The role a call of a Mutation field needs that the caller lacks, if any. */
function missingRole(viewer: Viewer, rule: AccessRule | undefined): OperatorRole | null {
  if (rule?.role) return mayUse(viewer, rule.role) ? null : rule.role;
  // A mutation open to partners: an operator key may call it as the admin key does, unless it can only read.
  return roleOf(viewer) === 'VIEWER' ? 'OPERATOR' : null;
}

/** Wraps every field that carries @requires or @audited, and every Mutation field (see the file's head). Changes `schema` in place. */
export function enforceAccess(schema: GraphQLSchema): GraphQLSchema {
  const rules = new Map(accessRules(schema).map((rule) => [rule.field, rule]));
  const wrap = (typeName: string, fieldName: string, rule: AccessRule | undefined, mutation: boolean) => {
    const field = (schema.getType(typeName) as { getFields(): Record<string, GraphQLFieldConfig<unknown, AccessContext>> }).getFields()[fieldName]!;
    const audited = rule?.audited ?? false;
    const auditsPartners = rule?.auditsPartners ?? true;
    const guard = <T>(inner: GraphQLFieldResolver<unknown, AccessContext>, audit: boolean): GraphQLFieldResolver<unknown, AccessContext> => {
      return async (source, args, ctx, info) => {
        const entry = (outcome: string, withArguments: boolean): AuditRecord => ({
          actor: actorOf(ctx.viewer),
          operatorId: ctx.viewer.kind === 'admin' ? (ctx.viewer.operator?.id ?? null) : null,
          operation: fieldName,
          arguments: withArguments ? summarizeArguments(args) : {},
          outcome,
          requestId: ctx.requestId,
          clientRequestId: ctx.clientRequestId ?? null,
          test: testModeActed(ctx.viewer, fieldName, args),
        });
        const missing = mutation ? missingRole(ctx.viewer, rule) : rule?.role && !mayUse(ctx.viewer, rule.role) ? rule.role : null;
        if (missing) {
          // A refused mutation is audited, declared or not: a VIEWER key trying a claim is worth a row.
          if (mutation) await ctx.services.audit.record(entry(ErrorCode.FORBIDDEN, false));
          throw forbidden(missing);
        }
        if (!audit || (ctx.viewer.kind === 'partner' && !auditsPartners)) return inner(source, args, ctx, info) as T;
        try {
          const result = (await inner(source, args, ctx, info)) as T;
          await ctx.services.audit.record(entry(returnedOutcome(result), true));
          return result;
        } catch (error) {
          const refused = error instanceof Refusal || outcomeOf(error) === ErrorCode.FORBIDDEN;
          await ctx.services.audit.record(entry(refused ? ErrorCode.FORBIDDEN : outcomeOf(error), !refused));
          throw error;
        }
      };
    };
    field.resolve = guard(field.resolve ?? defaultFieldResolver, audited);
    // A subscription is checked when it is set up (subscribe), before anything is read.
    if (field.subscribe) field.subscribe = guard(field.subscribe, false);
  };
  for (const rule of rules.values()) {
    const [typeName, fieldName] = rule.field.split('.') as [string, string];
    if (typeName !== schema.getMutationType()?.name) wrap(typeName, fieldName, rule, false);
  }
  const mutationType = schema.getMutationType();
  for (const fieldName of Object.keys(mutationType?.getFields() ?? {})) wrap(mutationType!.name, fieldName, rules.get(`${mutationType!.name}.${fieldName}`), true);
  return schema;
}
