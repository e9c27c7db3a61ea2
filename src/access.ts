// Who may call what, from one declaration: the `@requires(role: …)` and `@audited` directives in
// schema.graphql. When the schema is built, every field that carries one is wrapped here:
//   - @requires: the caller's role is checked before the field runs: FORBIDDEN otherwise;
//   - @audited: any caller with a key may run the field (it checks ownership itself), and it is
//     audited as below;
//   - a Mutation field that carries either is audited: one row per execution of the field, written
//     from what actually ran. Fragments are expanded and @skip/@include honoured, because the row is
//     written by the field's own resolver, on every transport. A refused call is recorded without
//     its arguments, as FORBIDDEN: refused for want of a role, or by the field because the object
//     is another partner's (a Refusal, errors.ts — the caller is answered NOT_FOUND, the audit log
//     says what happened).
// The list of these fields (accessRules) is what the tests walk, so a new field cannot be left out
// of them.
import { defaultFieldResolver, GraphQLError, isObjectType, type GraphQLFieldConfig, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Viewer } from './auth';
import type { AuditRecord } from './audit';
import { apiError, ErrorCode, InvalidInput, Refusal } from './errors';
import { summarizeArguments } from './auditArguments';

export type OperatorRole = 'OWNER' | 'OPERATOR' | 'VIEWER';
const RANK: Record<OperatorRole, number> = { VIEWER: 1, OPERATOR: 2, OWNER: 3 };

export interface AccessRule {
  /** `Type.field` */
  readonly field: string;
  /** The role @requires asks for; null for @audited (any caller with a key). */
  readonly role: OperatorRole | null;
  /** Mutation fields are audited. */
  readonly audited: boolean;
}

/** What a wrapped resolver needs from the context. */
export interface AccessContext {
  readonly viewer: Viewer;
  readonly requestId: string;
  readonly clientRequestId?: string;
  readonly services: { readonly audit: { record(entry: AuditRecord): Promise<void> } };
}

/** The caller's role: the admin key is an OWNER; a partner key has none. */
export function roleOf(viewer: Viewer): OperatorRole | null {
  return viewer.kind === 'admin' ? 'OWNER' : null;
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
      const audited = directives.some((d) => d.name.value === 'audited');
      if (requires && audited) throw new Error(`${name}: @requires already audits a Mutation field; drop @audited`);
      if (audited) {
        // A read is not audited, and a field open to every caller needs no rule at all.
        if (!isMutation) throw new Error(`${name}: @audited is for Mutation fields`);
        rules.push({ field: name, role: null, audited: true });
        continue;
      }
      const role = requires?.arguments?.find((a) => a.name.value === 'role')?.value;
      if (!role) continue;
      if (role.kind !== 'EnumValue' || !(role.value in RANK)) throw new Error(`${name}: @requires needs an OperatorRole`);
      rules.push({ field: name, role: role.value as OperatorRole, audited: isMutation });
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

const actorOf = (viewer: Viewer) => (viewer.kind === 'admin' ? 'admin' : `partner:${viewer.partnerId}`);

/** Wraps every field that carries @requires or @audited (see the file's head). Changes `schema` in place. */
export function enforceAccess(schema: GraphQLSchema): GraphQLSchema {
  for (const rule of accessRules(schema)) {
    const [typeName, fieldName] = rule.field.split('.') as [string, string];
    const field = (schema.getType(typeName) as { getFields(): Record<string, GraphQLFieldConfig<unknown, AccessContext>> }).getFields()[fieldName]!;
    const guard = <T>(inner: GraphQLFieldResolver<unknown, AccessContext>, audited: boolean): GraphQLFieldResolver<unknown, AccessContext> => {
      return async (source, args, ctx, info) => {
        const entry = (outcome: string, withArguments: boolean): AuditRecord => ({
          actor: actorOf(ctx.viewer),
          operation: fieldName,
          arguments: withArguments ? summarizeArguments(args) : {},
          outcome,
          requestId: ctx.requestId,
          clientRequestId: ctx.clientRequestId ?? null,
        });
        if (rule.role !== null && !mayUse(ctx.viewer, rule.role)) {
          if (audited) await ctx.services.audit.record(entry(ErrorCode.FORBIDDEN, false));
          throw forbidden(rule.role);
        }
        if (!audited) return inner(source, args, ctx, info) as T;
        try {
          const result = (await inner(source, args, ctx, info)) as T;
          await ctx.services.audit.record(entry('OK', true));
          return result;
        } catch (error) {
          const refused = error instanceof Refusal;
          await ctx.services.audit.record(entry(refused ? ErrorCode.FORBIDDEN : outcomeOf(error), !refused));
          throw error;
        }
      };
    };
    field.resolve = guard(field.resolve ?? defaultFieldResolver, rule.audited);
    // A subscription is checked when it is set up (subscribe), before anything is read.
    if (field.subscribe) field.subscribe = guard(field.subscribe, false);
  }
  return schema;
}
