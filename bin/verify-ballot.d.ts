// The types of verify-ballot.js, which stays plain JavaScript so that it can be copied and run alone.

/** A drawn ballot as the API shows it (Campaign.ballot). */
export interface Ballot {
  seedCommitment: string;
  seed: string | null;
  entriesDigest: string | null;
  entryCount: number | null;
  winners: number | null;
  drawnAt: string | null;
  tickets: number;
  partnerLimits: Record<string, { allotted?: number; quota?: number }> | null;
}

/** A drawn entry, in rank order. */
export interface BallotEntry {
  id: string;
  quantity: number;
  status: string;
  rank: number;
  wonInDraw: boolean;
  partnerId: string;
}

export function verifyBallot(ballot: Ballot, entries: BallotEntry[]): { ok: true; summary: string } | { ok: false; mismatch: string };

export function readBallotFile(
  text: string,
  name: string,
): { ok: true; published: { campaignId?: string; ballot: Ballot; entries: BallotEntry[] } } | { ok: false; reason: string };

export function sha256(text: string): string;
