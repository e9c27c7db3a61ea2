// Operator keys (OWNER only): the list, a new key with its role (shown once, with a copy button),
// and revocation. Other roles are not led here (the header leaves the page out); reached by its
// address, it says that only an OWNER key can see operator keys, with no control.
import { gql, session } from './api';
import { screen } from './shell';
import { action, ask, copyable, guardForm, h, problem, rowsOr, table, when } from './ui';

interface OperatorKey {
  id: string;
  name: string;
  role: 'OWNER' | 'OPERATOR' | 'VIEWER';
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const FIELDS = 'id name role createdAt lastUsedAt revokedAt';
const ROLE_TEXT = {
  OWNER: 'OWNER — everything, operator keys included',
  OPERATOR: 'OPERATOR — everything but operator keys',
  VIEWER: 'VIEWER — reads everything, changes nothing',
};

export async function operatorKeys(): Promise<void> {
  const body = h('tbody', { 'data-testid': 'operator-keys' });
  const status = h('div');
  const created = h('div');
  const name = h('input', { id: 'o-name', required: true, maxlength: '200', 'data-testid': 'operator-name' }) as HTMLInputElement;
  const role = h('select', { id: 'o-role', 'data-testid': 'operator-role' }, ...(['VIEWER', 'OPERATOR', 'OWNER'] as const).map((r) => h('option', { value: r }, ROLE_TEXT[r]))) as HTMLSelectElement;
  const form = guardForm(
    h('form.stack', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const data = await gql<{ createOperatorKey: { apiKey: string; key: OperatorKey } }>(
            `mutation($input: CreateOperatorKeyInput!) { createOperatorKey(input: $input) { apiKey key { ${FIELDS} } } }`,
            { input: { name: name.value, role: role.value } },
          );
          created.replaceChildren(
            h('div.key-once', { role: 'status', 'data-testid': 'key-once' },
              h('p', {}, h('strong', {}, `${data.createOperatorKey.key.name} (${data.createOperatorKey.key.role}). `), 'Copy the key now: it is shown once and never again.'),
              copyable(data.createOperatorKey.apiKey, 'api-key', 'Copy key')),
          );
          name.value = '';
          await load();
        } catch (error) {
          created.replaceChildren(problem(error));
        }
      },
    },
    h('label', { for: 'o-name' }, 'Name (who or what uses it)'), name,
    h('label', { for: 'o-role' }, 'Role'), role,
    h('button', { type: 'submit', 'data-testid': 'create-operator-key' }, 'Create key')),
    'owner',
  );
  screen(
    h('h1', {}, 'Operator keys'),
    h('p.meta', {}, 'ADMIN_API_KEY is an OWNER and is not listed: change it by restarting the server with a new one.'),
    form,
    created,
    status,
    table(['Name', 'Role', 'Key', 'Last used', 'Created', 'Action'], body),
  );
  const revoke = async (k: OperatorKey) => {
    if (!(await ask(`Revoke ${k.name}'s key? Every request with it fails from now on, and its open connections close.`, 'Revoke', { danger: true }))) return;
    try {
      await gql('mutation($id: ID!) { revokeOperatorKey(id: $id) { id } }', { id: k.id });
      await load();
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };
  const load = async () => {
    if (session.role !== 'OWNER') {
      body.replaceChildren(...rowsOr([], 6, 'Only an OWNER key can see operator keys.'));
      return;
    }
    try {
      const data = await gql<{ operatorKeys: OperatorKey[] }>(`{ operatorKeys { ${FIELDS} } }`);
      status.replaceChildren();
      body.replaceChildren(
        ...rowsOr(
          data.operatorKeys.map((k) =>
            h('tr', { 'data-testid': `operator-${k.id}` },
              h('td', {}, k.name),
              h('td', {}, k.role),
              h('td', {}, k.revokedAt ? h('span', {}, 'revoked ', when(k.revokedAt)) : h('span.status.open', {}, 'active')),
              h('td', {}, when(k.lastUsedAt, 'never')),
              h('td', {}, when(k.createdAt)),
              h('td', {}, k.revokedAt ? '' : action('Revoke', { class: 'danger', 'data-testid': `revoke-${k.id}`, onclick: () => void revoke(k) }, 'owner')),
            ),
          ),
          6,
          'No operator keys yet: everyone uses ADMIN_API_KEY. Create one per person or system above.',
        ),
      );
    } catch (error) {
      status.replaceChildren(problem(error));
    }
  };
  await load();
}
