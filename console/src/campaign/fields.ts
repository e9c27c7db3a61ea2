// The fields the new-campaign form and the edit form share: the per-holder limit, the claim window,
// the release policy's choices and the whole-number inputs (hold cap, low-stock alert, offer time).
import { h, toLocalInput, ZONE } from '../ui';

/** The fields a campaign's window and limit share between creating and editing. */
export function windowFields(initial: { perHolderLimit?: number | null; opensAt?: string | null; closesAt?: string | null } = {}) {
  const limit = h('input', { id: 'f-limit', name: 'limit', type: 'number', min: '1', placeholder: 'no limit', value: initial.perHolderLimit ? String(initial.perHolderLimit) : '' }) as HTMLInputElement;
  const opensAt = h('input', { id: 'f-opens', name: 'opensAt', type: 'datetime-local', value: toLocalInput(initial.opensAt ?? null) }) as HTMLInputElement;
  const closesAt = h('input', { id: 'f-closes', name: 'closesAt', type: 'datetime-local', value: toLocalInput(initial.closesAt ?? null) }) as HTMLInputElement;
  return {
    limit,
    opensAt,
    closesAt,
    labels: [
      h('label', { for: 'f-limit' }, 'Tickets per holder (empty: no limit)'),
      limit,
      h('label', { for: 'f-opens' }, `Claims open at, ${ZONE} (empty: as soon as it is opened)`),
      opensAt,
      h('label', { for: 'f-closes' }, `Claims close at, ${ZONE} (empty: only when closed by hand)`),
      closesAt,
    ],
  };
}

/** The release policy's choices, as its select offers them. */
export const POLICY_OPTION: Record<string, string> = {
  POOL: 'Go back to the pool (default)',
  VOID: 'Are retired for good (VOID)',
  WAITLIST_FIRST: 'Go to the waitlist first',
};

/** A whole number of seconds (or a count), empty for the server's default. */
export const numberInput = (id: string, testid: string, placeholder: string, max: string) =>
  h('input', { id, name: id, type: 'number', min: '1', max, step: '1', placeholder, 'data-testid': testid }) as HTMLInputElement;
