// Editing a campaign, in a form under its actions: the name, per-holder limit and claim window; the
// hold cap, the low-stock alert and the waitlist's offer time of a DRAFT or OPEN campaign; the
// release policy while it is DRAFT. What is fixed (how it gives tickets, the policy once open, a
// ballot's confirmation time) is listed beside, read-only.
import { gql } from '../api';
import { fmt, fromLocalInput, h, problem } from '../ui';
import { numberInput, POLICY_OPTION, windowFields } from './fields';
import { POLICY_TEXT, type CampaignDetail, type CampaignPage } from './model';

/** Puts the edit form for `c` in `slot`, its name field focused; saving reads the page again. */
export function editCampaign(c: CampaignDetail, page: CampaignPage, slot: HTMLElement): void {
  const id = page.id;
  const name = h('input', { id: 'f-name', value: c.name, required: true, maxlength: '200', 'data-testid': 'edit-name' }) as HTMLInputElement;
  const fields = windowFields(c);
  // What updateCampaign changes besides: the hold cap, the low-stock alert and the offer time of a
  // DRAFT or OPEN campaign, the release policy while it is DRAFT.
  const numberOf = (input: HTMLInputElement, value: number | null) => {
    input.value = value === null ? '' : String(value);
    return input;
  };
  const maxHold = numberOf(numberInput('f-edit-max-hold', 'edit-max-hold', 'no limit', '2592000'), c.maxHoldSeconds);
  const lowStock = numberOf(numberInput('f-edit-low-stock', 'edit-low-stock', 'never', '10000000'), c.lowStockThreshold);
  const offerSeconds = numberOf(numberInput('f-edit-offer', 'edit-offer-seconds', '900', '2592000'), c.waitlistOfferSeconds);
  const draft = c.status === 'DRAFT';
  const policy = h('select', { id: 'f-edit-policy', 'data-testid': 'edit-release-policy' },
    ...Object.entries(POLICY_OPTION)
      .filter(([value]) => !(c.mode === 'BALLOT' && value === 'WAITLIST_FIRST'))
      .map(([value, text]) => h('option', { value, selected: value === c.releasePolicy }, text)),
  ) as HTMLSelectElement;
  const offerField = h('div.stack', { 'data-testid': 'edit-waitlist-fields' }, h('label', { for: 'f-edit-offer' }, 'A waitlist offer is held for, seconds'), offerSeconds);
  const syncOffer = () => (offerField.hidden = policy.value !== 'WAITLIST_FIRST');
  policy.addEventListener('change', syncOffer);
  syncOffer();
  const status = h('div');
  const form = h(
    'form.stack.panel',
    {
      'data-testid': 'edit-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const input: Record<string, unknown> = {
            name: name.value,
            perHolderLimit: fields.limit.value ? Number(fields.limit.value) : null,
            opensAt: fromLocalInput(fields.opensAt.value),
            closesAt: fromLocalInput(fields.closesAt.value),
            maxHoldSeconds: maxHold.value ? Number(maxHold.value) : null,
            lowStockThreshold: lowStock.value ? Number(lowStock.value) : null,
          };
          if (draft) input.releasePolicy = policy.value;
          if (policy.value === 'WAITLIST_FIRST' && offerSeconds.value) input.waitlistOfferSeconds = Number(offerSeconds.value);
          await gql('mutation($id: ID!, $input: UpdateCampaignInput!) { updateCampaign(id: $id, input: $input) { campaign { id } } }', { id, input });
          slot.replaceChildren();
          await page.refresh();
        } catch (error) {
          status.replaceChildren(problem(error));
        }
      },
    },
    h('h2', {}, 'Edit campaign'),
    h('label', { for: 'f-name' }, 'Name'),
    name,
    ...fields.labels,
    draft
      ? h('fieldset.stack', {},
          h('legend', {}, 'Release policy'),
          h('label', { for: 'f-edit-policy' }, 'Released and expired tickets'),
          policy,
          h('p.meta', {}, 'Can be changed until the campaign opens; fixed from then on.'),
          offerField,
        )
      : c.releasePolicy === 'WAITLIST_FIRST' ? offerField : '',
    h('label', { for: 'f-edit-max-hold' }, 'Longest hold, seconds, extensions included (empty: no limit; holds made from now on)'),
    maxHold,
    h('label', { for: 'f-edit-low-stock' }, 'Low-stock alert when available falls to (empty: never)'),
    lowStock,
    h('div.fixed', { 'data-testid': 'fixed-settings' },
      h('p', {}, draft ? 'Fixed when the campaign was created:' : 'Fixed when the campaign was created, or once it opened:'),
      h('ul', {},
        h('li', {}, `Gives tickets ${c.mode === 'BALLOT' ? 'by ballot' : 'first come, first served'}`),
        draft ? '' : h('li', {}, 'Released tickets ', h('span', { 'data-testid': 'fixed-release-policy' }, POLICY_TEXT[c.releasePolicy] ?? c.releasePolicy)),
        c.mode === 'BALLOT' ? h('li', {}, `Winners confirm within ${fmt(c.ballotConfirmSeconds ?? 0)} s`) : '',
      ),
    ),
    h('div.actions', {}, h('button', { type: 'submit', 'data-testid': 'save' }, 'Save'), h('button.secondary', { type: 'button', onclick: () => slot.replaceChildren() }, 'Cancel')),
    status,
  );
  slot.replaceChildren(form);
  name.focus();
}
