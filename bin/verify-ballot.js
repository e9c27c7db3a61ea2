// Recomputes a drawn ballot from its published data alone (issue 17): the seed, its commitment,
// entriesDigest and every drawn entry in rank order (id, quantity, rank, status, wonInDraw, partner id). No
// dependency beyond node:crypto, so that anyone can read what it checks — `tessera verify-ballot`
// feeds it from the API (bin/tessera.js), or from a file the operator published.
//
// The rule it checks is the contract's: rank by the lowercase hex sha256 of "<seed>:<entry id>",
// ascending; walking the ranking, an entry wins when the tickets not yet won cover its quantity —
// its partner's allotment first, then the shared pool — and its partner's quota does too
// (Ballot.tickets and Ballot.partnerLimits give those figures; with no limits it is the plain rule).
//
// verifyBallot(ballot, entries) returns { ok: true, summary } or { ok: false, mismatch } naming the
// first thing that does not hold.
'use strict';
const { createHash } = require('node:crypto');

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Code-point order (the contract's "sorted by code point"): not localeCompare. */
const byCodePoint = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function verifyBallot(ballot, entries) {
  const fail = (mismatch) => ({ ok: false, mismatch });
  if (!ballot || !ballot.seed || !ballot.drawnAt) return fail('the ballot is not drawn yet: there is nothing to verify');
  if (sha256(ballot.seed) !== ballot.seedCommitment) {
    return fail(`the seed does not hash to the commitment published at the opening (sha256(seed) = ${sha256(ballot.seed)}, commitment ${ballot.seedCommitment})`);
  }
  if (entries.length !== ballot.entryCount) return fail(`${entries.length} entries published, the ballot says ${ballot.entryCount} were drawn`);
  const digest = sha256(entries.map((e) => e.id).sort(byCodePoint).join('\n'));
  if (digest !== ballot.entriesDigest) return fail(`entriesDigest is ${ballot.entriesDigest}, the published entries hash to ${digest}`);

  // The list is the ranking as published: in rank order, each entry naming its rank.
  for (let i = 0; i < entries.length; i += 1) {
    if (entries[i].rank !== i + 1) return fail(`the published list is not in rank order: position ${i + 1} holds entry ${entries[i].id} with rank ${entries[i].rank}`);
  }
  const ranked = entries
    .map((e) => ({ ...e, key: sha256(`${ballot.seed}:${e.id}`) }))
    .sort((a, b) => byCodePoint(a.key, b.key));
  for (let i = 0; i < ranked.length; i += 1) {
    if (ranked[i].rank !== i + 1) return fail(`entry ${ranked[i].id} has rank ${ranked[i].rank}; sha256("<seed>:<id>") puts it at ${i + 1}`);
  }

  const limits = ballot.partnerLimits || {};
  const allotted = new Map(Object.entries(limits).filter(([, l]) => l.allotted !== undefined).map(([p, l]) => [p, l.allotted]));
  const caps = new Map(Object.entries(limits).filter(([, l]) => l.quota !== undefined).map(([p, l]) => [p, l.quota]));
  let shared = ballot.tickets - [...allotted.values()].reduce((a, b) => a + b, 0);
  if (!(shared >= 0)) return fail(`Ballot.tickets (${ballot.tickets}) is less than the partners' allotments`);
  let winners = 0;
  for (const e of ranked) {
    const partner = e.partnerId;
    const mine = allotted.get(partner) || 0;
    const cap = caps.get(partner);
    const wins = shared + mine >= e.quantity && (cap === undefined || cap >= e.quantity);
    if (wins) {
      const fromAllotment = Math.min(mine, e.quantity);
      if (fromAllotment > 0) allotted.set(partner, mine - fromAllotment);
      shared -= e.quantity - fromAllotment;
      if (cap !== undefined) caps.set(partner, cap - e.quantity);
      winners += 1;
    }
    if (wins !== e.wonInDraw) {
      return fail(`entry ${e.id} (rank ${e.rank}, quantity ${e.quantity}) ${e.wonInDraw ? 'is recorded as a winner' : 'is recorded as LOST'} at the draw; the rule makes it ${wins ? 'a winner' : 'LOST'}`);
    }
    // Afterwards: a draw winner is WON or LAPSED; a loser is LOST, or WON/LAPSED when tickets passed on to it.
    if (e.wonInDraw && !['WON', 'LAPSED'].includes(e.status)) return fail(`entry ${e.id} won the draw but is ${e.status}`);
    if (!['WON', 'LOST', 'LAPSED'].includes(e.status)) return fail(`entry ${e.id} is ${e.status}, which no drawn entry can be`);
  }
  if (winners !== ballot.winners) return fail(`the rule gives ${winners} winners; the ballot says ${ballot.winners}`);
  return {
    ok: true,
    summary: `${entries.length} entries, ${winners} winners at the draw; the seed matches its commitment, the entries their digest, every rank and every result the rule`,
  };
}

module.exports = { verifyBallot, sha256 };
