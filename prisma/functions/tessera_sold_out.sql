-- What "sold out" means — the one definition, used everywhere: stats.soldOut and soldOutAt
-- (tessera_campaign_counts, tessera_record_sold_out), CAMPAIGN_SOLD_OUT (tessera_stock_events), and
-- the claim's SOLD_OUT against ALL_HELD and ALL_ALLOTTED (tessera_claim_tickets).
--
-- A campaign is sold out when it has tickets and none is left that anyone could claim now or that
-- could come back by itself: nothing available; nothing allotted (an allotment's unused tickets go
-- back to the pool when it lapses); nothing held (a hold lapses, a waitlist offer passes on, a ticket
-- on its way to the waitlist is offered or pooled) — except under the VOID release policy, where a
-- held ticket can only end allocated or retired. In the figures of CampaignStats: total > 0,
-- available = 0, allotted = 0, and held = 0 unless the policy is VOID. Only a person ends a sell-out:
-- a release under POOL or WAITLIST_FIRST, or loading tickets.
--
-- Said of the ticket counters (campaign_counters: total, and the tickets ALLOCATED, HELD and VOID —
-- an AVAILABLE, ALLOTTED or RETURNED ticket is in none of the three), it is: every ticket is
-- allocated or void, or, under VOID, held. The same thing — every state a ticket can come back from
-- is left out — and O(1): the claim asks it on every refusal without reading a ticket. (A hold past
-- its expiry that the sweeper has not written yet is still HELD in the counters: not sold out, except
-- under VOID, which retires it — as the figures count it.) A pure function of its arguments, so the
-- caller's own snapshot of the counters decides; IMMUTABLE, so the planner inlines it.
CREATE OR REPLACE FUNCTION "tessera_sold_out"(p_total BIGINT, p_allocated BIGINT, p_held BIGINT, p_void BIGINT, p_release_policy TEXT)
  RETURNS BOOLEAN
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT p_total > 0 AND p_total = p_allocated + p_void + CASE WHEN p_release_policy = 'VOID' THEN p_held ELSE 0 END $$;
