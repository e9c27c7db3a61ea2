// The new-campaign form: name, per-holder limit, claim window, how it gives tickets (first come or a
// ballot, with the ballot's entry close and confirmation time), the release policy (with the
// waitlist's offer time), the hold cap and the low-stock alert. In Test mode it makes a test
// campaign. A VIEWER is told it cannot create one.
import { gql, session } from '../api';
import { screen } from '../shell';
import { fromLocalInput, h, may, notForRole, problem, ZONE } from '../ui';
import { numberInput, POLICY_OPTION, windowFields } from './fields';

export function newCampaign(): void {
  if (!may()) return screen(h('h1', {}, 'New campaign'), notForRole('create campaigns'));
  const name = h('input', { id: 'f-name', name: 'name', required: true, maxlength: '200', 'data-testid': 'campaign-name' }) as HTMLInputElement;
  const fields = windowFields();
  const mode = h('select', { id: 'f-mode', name: 'mode', 'data-testid': 'campaign-mode' },
    h('option', { value: 'FIRST_COME' }, 'First come, first served'),
    h('option', { value: 'BALLOT' }, 'Ballot: entries, then a draw'),
  ) as HTMLSelectElement;
  const entriesCloseAt = h('input', { id: 'f-entries', name: 'entriesCloseAt', type: 'datetime-local', 'data-testid': 'ballot-entries-close' }) as HTMLInputElement;
  const confirmSeconds = numberInput('f-confirm', 'ballot-confirm-seconds', '900 (default)', '2592000');
  const ballotFields = h('fieldset.stack', { hidden: true, 'data-testid': 'ballot-fields' },
    h('legend', {}, 'Ballot'),
    h('label', { for: 'f-entries' }, `Entries close at, ${ZONE} (empty: at the draw)`), entriesCloseAt,
    h('label', { for: 'f-confirm' }, 'Winners confirm within, seconds (empty: 900, or the longest hold if shorter)'), confirmSeconds,
  );
  const policy = h('select', { id: 'f-policy', name: 'releasePolicy', 'data-testid': 'campaign-release-policy' },
    ...Object.entries(POLICY_OPTION).map(([value, text]) => h('option', { value }, text)),
  ) as HTMLSelectElement;
  const offerSeconds = numberInput('f-offer', 'campaign-offer-seconds', '900 (default)', '2592000');
  const waitlistFields = h('div.stack', { hidden: true, 'data-testid': 'waitlist-fields' },
    h('label', { for: 'f-offer' }, 'A waitlist offer is held for, seconds (empty: 900, or the longest hold if shorter)'), offerSeconds,
  );
  const maxHold = numberInput('f-max-hold', 'campaign-max-hold', 'no limit', '2592000');
  const lowStock = numberInput('f-low-stock', 'campaign-low-stock', 'never', '10000000');
  const sync = () => {
    const ballot = mode.value === 'BALLOT';
    // A ballot passes returned tickets on to its ranking: it has no waitlist.
    const waitlistOption = policy.querySelector<HTMLOptionElement>('option[value="WAITLIST_FIRST"]')!;
    waitlistOption.disabled = ballot;
    waitlistOption.hidden = ballot;
    if (ballot && policy.value === 'WAITLIST_FIRST') policy.value = 'POOL';
    ballotFields.hidden = !ballot;
    waitlistFields.hidden = policy.value !== 'WAITLIST_FIRST';
  };
  mode.addEventListener('change', sync);
  policy.addEventListener('change', sync);
  const status = h('div');
  const form = h(
    'form.stack',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const input: Record<string, unknown> = { name: name.value, mode: mode.value, releasePolicy: policy.value };
          if (session.testMode) input.test = true;
          if (fields.limit.value) input.perHolderLimit = Number(fields.limit.value);
          if (fields.opensAt.value) input.opensAt = fromLocalInput(fields.opensAt.value);
          if (fields.closesAt.value) input.closesAt = fromLocalInput(fields.closesAt.value);
          if (maxHold.value) input.maxHoldSeconds = Number(maxHold.value);
          if (lowStock.value) input.lowStockThreshold = Number(lowStock.value);
          if (policy.value === 'WAITLIST_FIRST' && offerSeconds.value) input.waitlistOfferSeconds = Number(offerSeconds.value);
          if (mode.value === 'BALLOT') {
            if (entriesCloseAt.value) input.entriesCloseAt = fromLocalInput(entriesCloseAt.value);
            if (confirmSeconds.value) input.ballotConfirmSeconds = Number(confirmSeconds.value);
          }
          const data = await gql<{ createCampaign: { campaign: { id: string } } }>('mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }', { input });
          location.hash = `#/campaigns/${data.createCampaign.campaign.id}`;
        } catch (error) {
          status.replaceChildren(problem(error));
        }
      },
    },
    h('label', { for: 'f-name' }, 'Name'),
    name,
    ...fields.labels,
    h('label', { for: 'f-mode' }, 'Gives tickets by (chosen once)'),
    mode,
    ballotFields,
    h('fieldset.stack', {},
      h('legend', {}, 'Release policy'),
      h('label', { for: 'f-policy' }, 'Released and expired tickets'),
      policy,
      h('p.meta', {}, 'Can be changed until the campaign opens; fixed from then on.'),
      waitlistFields,
    ),
    h('label', { for: 'f-max-hold' }, 'Longest hold, seconds, extensions included (empty: no limit; at most 2,592,000 = 30 days)'),
    maxHold,
    h('label', { for: 'f-low-stock' }, 'Low-stock alert: the CAMPAIGN_LOW_STOCK webhook fires when this many or fewer are available (empty: never)'),
    lowStock,
    h('button', { type: 'submit', 'data-testid': 'create-campaign' }, 'Create'),
    status,
  );
  sync();
  screen(h('h1', {}, session.testMode ? 'New test campaign' : 'New campaign'), form);
}
