// What an operation costs, worked out from the values it will run with — for the document limit
// (GRAPHQL_MAX_COST) and for the rate-limit charge alike, on every transport (operations.ts).
//
// Why not graphql-armor's cost rule, which Tessera used before: it is a validation rule, and
// validation sees no variables, so it multiplied by a literal `first: 100` only. The same query with
// `first: $n` and `$n = 100`, or with `first` left out, cost what a page of one costs: a nested
// `allocations(first: $n) { … allocations(first: $n) }` returned 10,000 rows in 4.9 s for 1 point.
// Here a page size is what execution will use: the literal, the variable's coerced value, or the
// default page when it is left out or null — bounded by the largest page (validation.ts's LIMITS),
// which is what execution refuses beyond anyway. Fragments count as if written inline, and @skip /
// @include are honoured with the coerced variables (a default included).
//
// The cost keeps armor's formula, so GRAPHQL_MAX_COST keeps its meaning: a leaf costs 1, an object
// field 2 plus 1.5 × what is under it, and a page multiplies that by its size. The charge is the
// root fields' points (rateLimit.ts: a claim 5, most fields 1) plus one point per OBJECTS_PER_POINT
// objects the operation's pages may return, so a page of 20 costs 2 more and the nested query above
// about a thousand.
import {
  getNamedType,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type FragmentSpreadNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type InlineFragmentNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { getDirectiveValues, getVariableValues } from 'graphql/execution/values';
import { OPERATION_COSTS } from './rateLimit';
import { LIMITS } from './validation';

/** graphql-armor's defaults: what GRAPHQL_MAX_COST was set against. */
const LEAF_COST = 1;
const OBJECT_COST = 2;
const DEPTH_FACTOR = 1.5;
/** The charge adds a point per this many objects an operation's pages may return. */
export const OBJECTS_PER_POINT = 10;

export interface OperationMeasure {
  /** What the document limit (GRAPHQL_MAX_COST) bounds. */
  readonly cost: number;
  /** Rate-limit points: the root fields' own, plus one per OBJECTS_PER_POINT objects its pages may return. */
  readonly points: number;
}

/** Variables that do not coerce: the operation will not run (execution refuses it), so it costs nothing more. */
const NOT_RUN: OperationMeasure = { cost: 0, points: 1 };

/** Per operation: the variables its measure depends on (page sizes, @skip/@include conditions). */
const costVariables = new WeakMap<OperationDefinitionNode, ReadonlySet<string>>();
/** Per operation whose measure depends on no variable: that measure (Apollo reuses one parsed document per query text). */
const fixedMeasures = new WeakMap<OperationDefinitionNode, OperationMeasure>();

/** What an operation costs with these (raw, uncoerced) variables. */
export function measureOperation(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): OperationMeasure {
  const fixed = fixedMeasures.get(operation);
  if (fixed) return fixed;
  const fragments = fragmentsOf(document);
  let names = costVariables.get(operation);
  if (!names) costVariables.set(operation, (names = variablesThatCost(operation, fragments)));
  if (names.size === 0) {
    const measure = new Walk(schema, fragments, {}).operation(operation);
    fixedMeasures.set(operation, measure);
    return measure;
  }
  // Only the variables that matter are coerced: a claim's input is not coerced twice.
  const definitions = (operation.variableDefinitions ?? []).filter((d) => names.has(d.variable.name.value));
  const coerced = getVariableValues(schema, definitions, variables);
  if (coerced.errors) return NOT_RUN;
  return new Walk(schema, fragments, coerced.coerced).operation(operation);
}

const fragmentsOf = (document: DocumentNode): ReadonlyMap<string, FragmentDefinitionNode> =>
  new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));

/** The variables used as a `first` or as an @skip/@include condition, in the operation and the fragments it spreads. */
function variablesThatCost(operation: OperationDefinitionNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>): ReadonlySet<string> {
  const names = new Set<string>();
  const seen = new Set<string>();
  const visitSet = (set: SelectionSetNode): void => {
    for (const selection of set.selections) {
      for (const directive of selection.directives ?? []) {
        if (directive.name.value !== 'skip' && directive.name.value !== 'include') continue;
        for (const argument of directive.arguments ?? []) if (argument.value.kind === Kind.VARIABLE) names.add(argument.value.name.value);
      }
      if (selection.kind === Kind.FIELD) {
        const first = selection.arguments?.find((a) => a.name.value === 'first');
        if (first?.value.kind === Kind.VARIABLE) names.add(first.value.name.value);
        if (selection.selectionSet) visitSet(selection.selectionSet);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) visitSet(selection.selectionSet);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) visitSet(fragment.selectionSet);
      }
    }
  };
  visitSet(operation.selectionSet);
  return names;
}

interface Tally {
  cost: number;
  /** Objects the pages under this selection may return. */
  objects: number;
}

/** One measurement: a walk of the operation with fixed variables; each fragment is measured once. */
class Walk {
  private readonly fragmentTallies = new Map<string, Tally>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
  ) {}

  operation(operation: OperationDefinitionNode): OperationMeasure {
    const root =
      operation.operation === 'mutation' ? this.schema.getMutationType() : operation.operation === 'subscription' ? this.schema.getSubscriptionType() : this.schema.getQueryType();
    if (!root) return NOT_RUN;
    const tally = this.selectionSet(root, operation.selectionSet);
    // Root fields by response key, as execution merges them: fifteen aliased claims are fifteen.
    let points = 0;
    for (const name of this.rootFields(operation.selectionSet, new Map()).values()) points += OPERATION_COSTS[name] ?? 1;
    return { cost: tally.cost, points: Math.max(points, 1) + Math.ceil(tally.objects / OBJECTS_PER_POINT) };
  }

  private rootFields(set: SelectionSetNode, fields: Map<string, string>, spread = new Set<string>()): Map<string, string> {
    for (const selection of set.selections) {
      if (!this.included(selection)) continue;
      if (selection.kind === Kind.FIELD) {
        if (!selection.name.value.startsWith('__')) fields.set(selection.alias?.value ?? selection.name.value, selection.name.value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) this.rootFields(selection.selectionSet, fields, spread);
      else if (!spread.has(selection.name.value)) {
        spread.add(selection.name.value);
        const fragment = this.fragments.get(selection.name.value);
        if (fragment) this.rootFields(fragment.selectionSet, fields, spread);
      }
    }
    return fields;
  }

  private selectionSet(parent: GraphQLCompositeType, set: SelectionSetNode): Tally {
    const tally: Tally = { cost: 0, objects: 0 };
    for (const selection of set.selections) {
      if (!this.included(selection)) continue;
      const part =
        selection.kind === Kind.FIELD ? this.field(parent, selection) : selection.kind === Kind.INLINE_FRAGMENT ? this.inlineFragment(parent, selection) : this.spread(selection);
      tally.cost += part.cost;
      tally.objects += part.objects;
    }
    return tally;
  }

  private field(parent: GraphQLCompositeType, node: FieldNode): Tally {
    const name = node.name.value;
    // Introspection is bounded by its own rules (and off in production); __typename is a leaf.
    if (name === '__schema' || name === '__type') return { cost: 0, objects: 0 };
    const definition = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
    const type = definition ? getNamedType(definition.type) : undefined;
    if (!node.selectionSet || !definition || !isCompositeType(type)) return { cost: LEAF_COST, objects: 0 };
    const under = this.selectionSet(type, node.selectionSet);
    const page = definition.args.some((a) => a.name === 'first') ? this.pageSize(node) : undefined;
    const size = page ?? 1;
    return {
      cost: (OBJECT_COST + DEPTH_FACTOR * under.cost) * size,
      objects: page === undefined ? under.objects : page * (1 + under.objects),
    };
  }

  private inlineFragment(parent: GraphQLCompositeType, node: InlineFragmentNode): Tally {
    const type = node.typeCondition ? this.schema.getType(node.typeCondition.name.value) : parent;
    return isCompositeType(type) ? this.selectionSet(type, node.selectionSet) : { cost: 0, objects: 0 };
  }

  private spread(node: FragmentSpreadNode): Tally {
    const name = node.name.value;
    const known = this.fragmentTallies.get(name);
    if (known) return known;
    // Validation refuses cycles before this runs; the placeholder keeps a walk finite regardless.
    this.fragmentTallies.set(name, { cost: 0, objects: 0 });
    const fragment = this.fragments.get(name);
    const type = fragment ? this.schema.getType(fragment.typeCondition.name.value) : undefined;
    const tally = fragment && isCompositeType(type) ? this.selectionSet(type, fragment.selectionSet) : { cost: 0, objects: 0 };
    this.fragmentTallies.set(name, tally);
    return tally;
  }

  /** The page a connection field will return at most: its `first`, or the default page; 1 to LIMITS.pageSize. */
  private pageSize(node: FieldNode): number {
    const argument = node.arguments?.find((a) => a.name.value === 'first')?.value;
    let value: unknown;
    if (argument?.kind === Kind.INT) value = Number(argument.value);
    else if (argument?.kind === Kind.VARIABLE) value = this.variables[argument.name.value];
    const first = typeof value === 'number' && Number.isFinite(value) ? value : LIMITS.defaultPageSize;
    return Math.min(Math.max(Math.trunc(first), 1), LIMITS.pageSize);
  }

  /** @skip/@include with the coerced variables. A condition that cannot be read (a null) will fail execution: counted as included. */
  private included(node: FieldNode | InlineFragmentNode | FragmentSpreadNode): boolean {
    if (!node.directives?.length) return true;
    try {
      if (getDirectiveValues(GraphQLSkipDirective, node, this.variables)?.if === true) return false;
      return getDirectiveValues(GraphQLIncludeDirective, node, this.variables)?.if !== false;
    } catch {
      return true;
    }
  }
}
