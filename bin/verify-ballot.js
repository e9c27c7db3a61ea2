// Recomputes a drawn ballot from its published data alone: the seed, its commitment,
// entriesDigest and every drawn entry in rank order (id, quantity, rank, status, wonInDraw, partner id). No
// dependency beyond node:crypto, so that anyone can read what it checks — `tessera verify-ballot`
// feeds it from the API (src/cli/verifyBallot.ts), or from a file the operator published. Its types
// are in verify-ballot.d.ts.
//
// The rule it checks is the contract's: rank by the lowercase hex sha256 of "<seed>:<entry id>",
// ascending; walking the ranking, an entry wins when the tickets not yet won cover its quantity —
// its partner's allotment first, then the shared pool — and its partner's quota does too
// (Ballot.tickets and Ballot.partnerLimits give those figures; with no limits it is the plain rule).
//
// verifyBallot(ballot, entries) returns { ok: true, summary } or { ok: false, mismatch } naming the
// first thing that does not hold.
//
// Run as a program, it checks a published file — `node bin/verify-ballot.js ballot.json` — and is
// `tessera verify-ballot --file ballot.json` without the API: the same reading of the file
// (readBallotFile), the same check and the same verdict ("verified: …", exit 0; the first mismatch,
// exit 1). It stays one file with no dependency beyond node's own modules, so that it can be copied
// and run on its own.
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');

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

/**
 * The ballot and entries of a file written by `tessera verify-ballot --save`, from its text; or why
 * it is not one. `name` names the file in the reason.
 */
function readBallotFile(text, name) {
  let published;
  try {
    published = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `${name} is not a ballot file: ${error.message}` };
  }
  if (!published || typeof published !== 'object' || !published.ballot || !Array.isArray(published.entries)) {
    return { ok: false, reason: `${name} is not a ballot file (expected {"campaignId", "ballot", "entries"}, as --save writes)` };
  }
  return { ok: true, published };
}

const USAGE = `Usage: node bin/verify-ballot.js <ballot.json>

Recomputes a drawn ballot from a file published with "tessera verify-ballot --save": the seed
against its commitment, entriesDigest against the entries, every rank and every draw result.
Prints "verified: ..." and exits 0, or names the first mismatch and exits 1 (2: wrong usage).
To also check the file against what the API shows for its campaign:
  npx tessera verify-ballot --file <ballot.json> --campaign <id> --key <key>`;

/** The program: the exit status; the verdict on stdout, a failure as one line on stderr. */
function main(args) {
  const fail = (code, message) => {
    process.stderr.write(`verify-ballot: ${message}\n`);
    return code;
  };
  if (args.length === 1 && (args[0] === '-h' || args[0] === '--help')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args.length !== 1 || args[0].startsWith('-')) return fail(2, `expected one ballot file, got ${args.length === 0 ? 'none' : args.join(' ')} (see: node bin/verify-ballot.js --help)`);
  let text;
  try {
    text = readFileSync(args[0], 'utf8');
  } catch (error) {
    return fail(1, `cannot read ${args[0]}: ${error.code === 'ENOENT' ? 'no such file' : (error.code ?? error.message)}`);
  }
  const file = readBallotFile(text, args[0]);
  if (!file.ok) return fail(1, file.reason);
  const result = verifyBallot(file.published.ballot, file.published.entries);
  if (!result.ok) return fail(1, `mismatch: ${result.mismatch}`);
  process.stdout.write(`verified: ${result.summary}\n`);
  return 0;
}

module.exports = { verifyBallot, readBallotFile, sha256 };

if (require.main === module) process.exitCode = main(process.argv.slice(2));
