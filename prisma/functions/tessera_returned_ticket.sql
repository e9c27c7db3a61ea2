-- Where a ticket goes when its allocation stops being live (a release, or a hold that ended), under
-- the campaign's release policy:
--   VOID                                   retired for good: VOID (the allotment it was drawn
--                                          from, if any, shrinks with it: its size is used + what
--                                          is left, src/db/allotments.ts);
--   drawn from the partner's live allotment back to that allotment: ALLOTTED;
--   WAITLIST_FIRST                         RETURNED: offered to the waitlist, or put back in the
--                                          pool, by tessera_offer_returned — which whoever returns
--                                          it calls next (src/db/waitlist.ts), the sweeper within a
--                                          second if that caller died first;
--   otherwise                              back to the pool: AVAILABLE.
-- The policy never changes after creation; an allotment is live until its lapses_at.
-- The sweeper (tessera_expire_holds) and leaveWaitlist (tessera_leave_waitlist) write this same rule
-- inside their statements instead of calling this: on Citus those statements run on the campaign's
-- shard, where a function they call cannot query a table. Call this from PL/pgSQL (or a statement
-- that names no distributed table), and keep the three in step.
-- (PL/pgSQL, checked when it runs: it names columns and a table migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_returned_ticket"(p_campaign_id UUID, p_partner_id UUID, p_drawn BOOLEAN) RETURNS ticket_status
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    policy TEXT := (SELECT release_policy::text FROM campaigns WHERE id = p_campaign_id);
BEGIN
    IF policy = 'VOID' THEN
        RETURN 'VOID';
    END IF;
    IF p_drawn AND EXISTS (SELECT 1 FROM allotments l
                            WHERE l.campaign_id = p_campaign_id AND l.partner_id = p_partner_id
                              AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())) THEN
        RETURN 'ALLOTTED';
    END IF;
    IF policy = 'WAITLIST_FIRST' THEN
        RETURN 'RETURNED';
    END IF;
    RETURN 'AVAILABLE';
END
$$;
