-- Waitlists (issue 16, src/db/waitlist.ts). A type of their own migration: a new enum value cannot
-- be used in the transaction that adds it.
--   RETURNED: a ticket that came back (a release, an expired hold or offer, a lapsed allotment) in a
--   WAITLIST_FIRST campaign and waits for tessera_offer_returned to offer it to the waitlist, or to
--   put it back in the pool. Counted as held meanwhile; no claim ever takes it.
ALTER TYPE "ticket_status" ADD VALUE 'RETURNED';
CREATE TYPE "waitlist_status" AS ENUM ('WAITING', 'OFFERED', 'ACCEPTED', 'EXPIRED', 'LEFT');
