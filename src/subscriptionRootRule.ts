// A validation rule for one hole in graphql-js 16: its SingleFieldSubscriptionsRule collects a
// subscription's root fields with no variables at all, and *throws* when a root field's @skip or
// @include takes its condition from a variable (`subscription($on: Boolean = true) {
// campaignStats(id: …) @include(if: $on) { … } }`). validate() does not catch it, so Apollo and
// graphql-ws both answered 500. graphql-js 17 refuses @skip/@include on a subscription's root fields
// outright ("Subscription … must not use @skip or @include directives in the top level selection"),
// and so does this rule — as a validation error, on every transport (operations.ts).
//
// How it keeps the built-in rule from throwing: rules share one parallel visit, and a visitor that
// returns a node from `enter` replaces that node for everything after it. On the Document, this rule
// reports each such subscription and hands the visit on without it.
import { GraphQLError, Kind, type ASTVisitor, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode, type ValidationRule } from 'graphql';

export const NoSkipOnSubscriptionRootRule: ValidationRule = (context): ASTVisitor => ({
  Document(document: DocumentNode) {
    const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
    const refused = document.definitions.filter(
      (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.operation === 'subscription' && skipsAtRoot(d.selectionSet, fragments, new Set()),
    );
    if (refused.length === 0) return undefined;
    for (const operation of refused) {
      context.reportError(
        new GraphQLError(`Subscription ${operation.name ? `"${operation.name.value}" ` : ''}must not use @skip or @include on its root field.`, { nodes: operation }),
      );
    }
    return { ...document, definitions: document.definitions.filter((d) => !refused.includes(d as OperationDefinitionNode)) };
  },
});

function skipsAtRoot(set: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, seen: Set<string>): boolean {
  return set.selections.some((selection) => {
    if (selection.directives?.some((d) => d.name.value === 'skip' || d.name.value === 'include')) return true;
    if (selection.kind === Kind.INLINE_FRAGMENT) return skipsAtRoot(selection.selectionSet, fragments, seen);
    if (selection.kind !== Kind.FRAGMENT_SPREAD || seen.has(selection.name.value)) return false;
    seen.add(selection.name.value);
    const fragment = fragments.get(selection.name.value);
    return fragment !== undefined && skipsAtRoot(fragment.selectionSet, fragments, seen);
  });
}
