// What the campaign page reads: the campaign with its figures, partners, allotments, waitlist and
// ballot summaries, chart and latest allocations, in one query (DETAIL), and the page's context
// that every panel is handed: the campaign's id, a way to read it all again, and the line under
// the actions where a change says what it did.
import { gql } from '../api';
import type { TimelinePoint } from '../timeline';
import type { Child } from '../ui';

export interface Stats {
  total: number;
  allocated: number;
  held: number;
  available: number;
  allotted: number;
  void: number;
  fillRate: number;
  /** Sold out now: nothing available, allotted or held that could come back (the API's one definition). */
  soldOut: boolean;
  /** When it first sold out (kept after a release or a load ends the sell-out). */
  soldOutAt: string | null;
}

export const STATS = 'total allocated held allotted available void fillRate soldOut soldOutAt';

export interface LatestAllocation {
  id: string;
  /** The campaign's own allocation number: 1 for its first (as in the CSV export). */
  sequence: number;
  holder: string;
  status: string;
  allocatedAt: string;
  ticket: { code: string };
  partner: { name: string };
}

export const ALLOCATION_FIELDS = 'id sequence holder status allocatedAt ticket { code } partner { name }';

export interface BallotFigures {
  seedCommitment: string;
  seed: string | null;
  entriesDigest: string | null;
  entryCount: number;
  winners: number;
  tickets: number | null;
  drawnAt: string | null;
}

export interface CampaignDetail {
  id: string;
  name: string;
  status: 'DRAFT' | 'OPEN' | 'CLOSED';
  /** A test campaign, with its clock (advanceTestClock). */
  test: boolean;
  testClock: string | null;
  opensAt: string | null;
  closesAt: string | null;
  perHolderLimit: number | null;
  releasePolicy: string;
  maxHoldSeconds: number | null;
  lowStockThreshold: number | null;
  stats: Stats;
  allotments: { partner: { name: string }; size: number; used: number; remaining: number; lapsesAt: string | null; lapsedAt: string | null }[];
  waitlistLength: number;
  waitlistOfferSeconds: number;
  offers: { totalCount: number };
  mode: 'FIRST_COME' | 'BALLOT';
  entriesCloseAt: string | null;
  ballotConfirmSeconds: number | null;
  ballot: BallotFigures | null;
  timeline: TimelinePoint[];
  partnerStats: { partner: { name: string }; allocated: number; held: number; quota: number | null }[];
  allocations: { totalCount: number; edges: { node: LatestAllocation }[] };
}

const DETAIL = `query($id: ID!) {
  campaign(id: $id) {
    id name status test testClock opensAt closesAt perHolderLimit releasePolicy maxHoldSeconds lowStockThreshold
    stats { ${STATS} }
    allotments { partner { name } size used remaining lapsesAt lapsedAt }
    waitlistLength waitlistOfferSeconds
    offers: waitlist(first: 0, status: OFFERED) { totalCount }
    mode entriesCloseAt ballotConfirmSeconds
    ballot { seedCommitment seed entriesDigest entryCount winners tickets drawnAt }
    timeline(bucket: MINUTE) { at allocated cumulative refused refusals { code count } }
    partnerStats { partner { name } allocated held quota }
    allocations(first: 15, order: NEWEST_FIRST) { totalCount edges { node { ${ALLOCATION_FIELDS} } } }
  }
}`;

/** The campaign as its page shows it, or null when no campaign has this id. */
export async function readCampaign(id: string): Promise<CampaignDetail | null> {
  const data = await gql<{ campaign: CampaignDetail | null }>(DETAIL, { id });
  return data.campaign;
}

/** Where released tickets go, as the page's summary line says it. */
export const POLICY_TEXT: Record<string, string> = {
  POOL: 'return to the pool',
  VOID: 'are retired (VOID)',
  WAITLIST_FIRST: 'go to the waitlist first',
};

/** What the page hands its panels. */
export interface CampaignPage {
  readonly id: string;
  /** Reads the campaign again and redraws every panel. */
  refresh(): Promise<void>;
  /** Says what a change did, or why it failed, under the actions (in place of what was there). */
  say(...children: Child[]): void;
}
