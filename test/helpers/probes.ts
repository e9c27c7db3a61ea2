// Documents generated from the schema: for any field, a request that reaches it with arguments that
// pass GraphQL's own checks (the resolver may still refuse them). The access and role tests walk
// the one declaration (@requires, @audited) with these, so a new field cannot be left out.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  buildSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql';

export const schema: GraphQLSchema = buildSchema(readFileSync(path.resolve(__dirname, '../../schema.graphql'), 'utf8'));

export const NO_SUCH_ID = '00000000-0000-0000-0000-0000000000aa';

export type Transport = 'http' | 'ws';

export interface Probe {
  query: string;
  variables: Record<string, unknown>;
  /** The transport that serves the field: subscriptions only over the socket. */
  transport: Transport;
}

/** A value of `type` that passes GraphQL's own checks; an ID named in `ids` gets that id. */
export function sample(type: GraphQLInputType, ids: Record<string, string>, name = ''): unknown {
  if (isNonNullType(type)) return sample(type.ofType, ids, name);
  if (isListType(type)) return [sample(type.ofType, ids, name)];
  if (isEnumType(type)) return type.getValues()[0]!.value;
  if (isInputObjectType(type)) {
    return Object.fromEntries(Object.values(type.getFields()).filter((f) => isNonNullType(f.type)).map((f) => [f.name, sample(f.type, ids, f.name)]));
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'ID':
        return ids[name] ?? NO_SUCH_ID;
      case 'Int':
        return 1;
      case 'Boolean':
        return true;
      case 'DateTime':
        return '2030-01-01T00:00:00Z';
      case 'JSON':
        return {};
      default:
        return 'x';
    }
  }
  throw new Error(`no sample for ${String(type)}`);
}

/** The field's required arguments as variables, and their declarations. */
function argumentsOf(args: readonly GraphQLArgument[], ids: Record<string, string>, prefix: string) {
  const required = args.filter((a) => isNonNullType(a.type));
  return {
    declarations: required.map((a) => `$${prefix}${a.name}: ${String(a.type)}`),
    call: required.length ? `(${required.map((a) => `${a.name}: $${prefix}${a.name}`).join(', ')})` : '',
    variables: Object.fromEntries(required.map((a) => [`${prefix}${a.name}`, sample(a.type, ids, a.name)])),
  };
}

/** A document that reaches `Type.field`: at the root, or through Query.campaign for Campaign fields. */
export function probeFor(field: string, ids: Record<string, string>, s: GraphQLSchema = schema): Probe {
  const [typeName, fieldName] = field.split('.') as [string, string];
  const type = s.getType(typeName);
  if (!isObjectType(type)) throw new Error(`${typeName} is not an object type`);
  const definition = type.getFields()[fieldName]!;
  const selection = isObjectType(getNamedType(definition.type)) ? ' { __typename }' : '';
  const own = argumentsOf(definition.args, ids, 'a_');
  const root = { Query: 'query', Mutation: 'mutation', Subscription: 'subscription' }[typeName];
  if (root) {
    const declarations = own.declarations.length ? `(${own.declarations.join(', ')})` : '';
    return { query: `${root} Probe${declarations} { ${fieldName}${own.call}${selection} }`, variables: own.variables, transport: root === 'subscription' ? 'ws' : 'http' };
  }
  if (typeName === 'Campaign') {
    const declarations = ['$campaign: ID!', ...own.declarations].join(', ');
    return { query: `query Probe(${declarations}) { campaign(id: $campaign) { ${fieldName}${own.call}${selection} } }`, variables: { campaign: ids.campaignId, ...own.variables }, transport: 'http' };
  }
  throw new Error(`add a path to ${field} in test/helpers/probes.ts`);
}

/** What a partner operation acts on: the campaign, allocation or entry its arguments name. */
export type Target = 'campaign' | 'allocation' | 'waitlistEntry' | 'ballotEntry';

/** The Mutation field's target, from its arguments (and its input's fields); null when it names none. */
export function targetOf(field: string, s: GraphQLSchema = schema): Target | null {
  const definition = s.getMutationType()!.getFields()[field]!;
  const names = definition.args.flatMap((a) => {
    const named = getNamedType(a.type);
    return isInputObjectType(named) ? Object.keys(named.getFields()) : [a.name];
  });
  if (names.includes('campaignId')) return 'campaign';
  if (names.includes('allocationId')) return 'allocation';
  if (names.includes('entryId')) return /Ballot/.test(field) ? 'ballotEntry' : 'waitlistEntry';
  return null;
}

/** Every leaf of a type, two levels down (fields without required arguments), for a whole-answer comparison. */
export function selectionOf(type: GraphQLOutputType, depth = 2): string {
  const named = getNamedType(type);
  if (isScalarType(named) || isEnumType(named)) return '';
  if (!isObjectType(named) || depth === 0) return '{ __typename }';
  const fields = Object.values(named.getFields()).filter((f: GraphQLField<unknown, unknown>) => f.args.every((a) => !String(a.type).endsWith('!')));
  return `{ __typename ${fields.map((f) => `${f.name} ${selectionOf(f.type, depth - 1)}`).join(' ')} }`;
}
