-- A ticket set aside for one partner by an allotment (issue 16; the next migration builds the rest):
-- ALLOTTED, with tickets.allotted_to naming the partner. Alone in its migration, because a new enum
-- value cannot be used in the transaction that adds it.
ALTER TYPE "ticket_status" ADD VALUE 'ALLOTTED';
