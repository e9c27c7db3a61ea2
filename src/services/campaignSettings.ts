// A campaign's settings as createCampaign and updateCampaign take them: validated against the
// limits and against each other (an offer and a winner's hold are holds, never longer than the
// hold cap; a ballot's settings belong to BALLOT campaigns only).
import { InvalidInput } from '../errors';
import type { CampaignMode, CampaignModel, ReleasePolicy } from '../models';
import * as validate from '../validation';

export interface CreateCampaignInput {
  name: string;
  perHolderLimit?: number | null;
  opensAt?: Date | null;
  closesAt?: Date | null;
  lowStockThreshold?: number | null;
  maxHoldSeconds?: number | null;
  releasePolicy?: ReleasePolicy | null;
  waitlistOfferSeconds?: number | null;
  mode?: CampaignMode | null;
  entriesCloseAt?: Date | null;
  ballotConfirmSeconds?: number | null;
  /** A test campaign (testMode.ts); fixed at creation. */
  test?: boolean | null;
}

export interface UpdateCampaignInput {
  name?: string | null;
  perHolderLimit?: number | null;
  opensAt?: Date | null;
  closesAt?: Date | null;
  releasePolicy?: ReleasePolicy | null;
  maxHoldSeconds?: number | null;
  lowStockThreshold?: number | null;
  waitlistOfferSeconds?: number | null;
}

/** How long a waitlist offer is held when createCampaign does not say (15 minutes). */
const DEFAULT_WAITLIST_OFFER_SECONDS = 900;
/** How long a ballot winner's hold lasts when createCampaign does not say (15 minutes). */
const DEFAULT_BALLOT_CONFIRM_SECONDS = 900;

const BALLOT_NOT_WAITLIST_FIRST = 'A BALLOT campaign passes returned tickets on to its ranking: WAITLIST_FIRST does not apply.';

/** A new campaign's settings, validated, with the defaults filled in (its id and test flag aside). */
export function newCampaignSettings(input: CreateCampaignInput) {
  const name = validate.text('name', input.name, validate.LIMITS.nameLength);
  const perHolderLimit = validate.optionalIntInRange('perHolderLimit', input.perHolderLimit, 1, validate.LIMITS.perHolderLimit);
  const lowStockThreshold = validate.optionalIntInRange('lowStockThreshold', input.lowStockThreshold, 1, validate.LIMITS.lowStockThreshold);
  const maxHoldSeconds = validate.optionalIntInRange('maxHoldSeconds', input.maxHoldSeconds, 1, validate.LIMITS.maxHoldSeconds);
  const releasePolicy = input.releasePolicy ?? 'POOL';
  // An offer is a hold: never longer than maxHoldSeconds.
  const waitlistOfferSeconds =
    validate.optionalIntInRange('waitlistOfferSeconds', input.waitlistOfferSeconds, 1, maxHoldSeconds ?? validate.LIMITS.maxHoldSeconds) ??
    Math.min(DEFAULT_WAITLIST_OFFER_SECONDS, maxHoldSeconds ?? DEFAULT_WAITLIST_OFFER_SECONDS);
  validate.campaignWindow(input.opensAt, input.closesAt);
  const ballot = ballotSettings(input, releasePolicy, maxHoldSeconds);
  return {
    name,
    perHolderLimit,
    lowStockThreshold,
    maxHoldSeconds,
    releasePolicy,
    waitlistOfferSeconds,
    ...ballot,
    opensAt: input.opensAt ?? null,
    closesAt: input.closesAt ?? null,
  };
}

/**
 * mode, entriesCloseAt and ballotConfirmSeconds of a new campaign. The two ballot settings belong to
 * BALLOT campaigns only; a winner's hold is a hold (never longer than maxHoldSeconds); a ballot's
 * tickets pass on to its ranking, so WAITLIST_FIRST does not combine with it.
 */
function ballotSettings(
  input: CreateCampaignInput,
  releasePolicy: ReleasePolicy,
  maxHoldSeconds: number | null,
): { mode: CampaignMode; entriesCloseAt: Date | null; ballotConfirmSeconds: number | null } {
  const mode = input.mode ?? 'FIRST_COME';
  if (mode !== 'BALLOT') {
    for (const field of ['entriesCloseAt', 'ballotConfirmSeconds'] as const) {
      if (input[field] !== undefined && input[field] !== null) throw new InvalidInput(field, `${field} applies to BALLOT campaigns only.`);
    }
    return { mode, entriesCloseAt: null, ballotConfirmSeconds: null };
  }
  if (releasePolicy === 'WAITLIST_FIRST') throw new InvalidInput('releasePolicy', BALLOT_NOT_WAITLIST_FIRST);
  const entriesCloseAt = validate.date('entriesCloseAt', input.entriesCloseAt ?? null);
  if (entriesCloseAt !== null) {
    if (entriesCloseAt.getTime() <= Date.now()) throw new InvalidInput('entriesCloseAt', 'entriesCloseAt must be in the future.');
    if (input.closesAt && entriesCloseAt > input.closesAt) throw new InvalidInput('entriesCloseAt', 'entriesCloseAt must not be after closesAt.');
  }
  const ballotConfirmSeconds =
    validate.optionalIntInRange('ballotConfirmSeconds', input.ballotConfirmSeconds, 1, maxHoldSeconds ?? validate.LIMITS.maxHoldSeconds) ??
    Math.min(DEFAULT_BALLOT_CONFIRM_SECONDS, maxHoldSeconds ?? DEFAULT_BALLOT_CONFIRM_SECONDS);
  return { mode, entriesCloseAt, ballotConfirmSeconds };
}

export type CampaignChanges = Partial<
  Pick<CampaignModel, 'name' | 'perHolderLimit' | 'opensAt' | 'closesAt' | 'releasePolicy' | 'maxHoldSeconds' | 'lowStockThreshold' | 'waitlistOfferSeconds'>
>;

/** updateCampaign's input, validated against the campaign as it is: what changes. */
export function campaignChanges(current: CampaignModel, input: UpdateCampaignInput): CampaignChanges {
  const data: CampaignChanges = {};
  const notNull = (field: 'name' | 'releasePolicy' | 'waitlistOfferSeconds') => {
    if (input[field] === null) throw new InvalidInput(field, `${field} cannot be null.`);
  };
  if (input.name !== undefined) {
    notNull('name');
    data.name = validate.text('name', input.name!, validate.LIMITS.nameLength);
  }
  if (input.perHolderLimit !== undefined) data.perHolderLimit = validate.optionalIntInRange('perHolderLimit', input.perHolderLimit, 1, validate.LIMITS.perHolderLimit);
  if (input.opensAt !== undefined) data.opensAt = input.opensAt;
  if (input.closesAt !== undefined) data.closesAt = input.closesAt;
  validate.campaignWindow(data.opensAt === undefined ? current.opensAt : data.opensAt, data.closesAt === undefined ? current.closesAt : data.closesAt);
  if (input.releasePolicy !== undefined) {
    notNull('releasePolicy');
    if (current.mode === 'BALLOT' && input.releasePolicy === 'WAITLIST_FIRST') throw new InvalidInput('releasePolicy', BALLOT_NOT_WAITLIST_FIRST);
    data.releasePolicy = input.releasePolicy!;
  }
  if (input.lowStockThreshold !== undefined) {
    data.lowStockThreshold = validate.optionalIntInRange('lowStockThreshold', input.lowStockThreshold, 1, validate.LIMITS.lowStockThreshold);
  }
  if (input.maxHoldSeconds !== undefined) data.maxHoldSeconds = validate.optionalIntInRange('maxHoldSeconds', input.maxHoldSeconds, 1, validate.LIMITS.maxHoldSeconds);
  const maxHold = (data.maxHoldSeconds === undefined ? current.maxHoldSeconds : data.maxHoldSeconds) ?? null;
  const confirmSeconds = current.ballotConfirmSeconds ?? null;
  if (input.waitlistOfferSeconds !== undefined) {
    notNull('waitlistOfferSeconds');
    data.waitlistOfferSeconds = validate.intInRange('waitlistOfferSeconds', input.waitlistOfferSeconds!, 1, maxHold ?? validate.LIMITS.maxHoldSeconds);
  }
  // An offer and a winner's hold are holds: never longer than the cap, the new one included.
  if (maxHold !== null) {
    const offer = data.waitlistOfferSeconds ?? current.waitlistOfferSeconds ?? 0;
    if (offer > maxHold) throw new InvalidInput('maxHoldSeconds', `maxHoldSeconds ${maxHold} is below the campaign's waitlistOfferSeconds (${offer}): lower that too.`);
    if (confirmSeconds !== null && confirmSeconds > maxHold) {
      throw new InvalidInput('maxHoldSeconds', `maxHoldSeconds ${maxHold} is below the campaign's ballotConfirmSeconds (${confirmSeconds}).`);
    }
  }
  return data;
}
