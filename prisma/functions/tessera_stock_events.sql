-- CAMPAIGN_SOLD_OUT and CAMPAIGN_LOW_STOCK (docs/WEBHOOKS.md), run by the sweeper of every instance
-- (src/sweeper.ts, every HOLD_SWEEP_INTERVAL_MS): for each OPEN campaign, from its figures
-- (tessera_campaign_counts; sold out as tessera_sold_out defines it: nothing available, allotted or
-- held that could come back — so no announcement while an allotment or a hold may still return tickets),
--   - sold out: the first time the campaign is sold out, once for good (sold_out_announced_at), as
--     soldOutAt is the first sell-out's; a release that ends a sell-out does not re-arm it;
--   - low stock: each time available falls to low_stock_threshold or below from above it
--     (low_stock_announced_at is set then, and cleared once available is above the threshold again,
--     which re-arms it).
-- The marker and the event are written by one statement, on rows it holds locked: two instances'
-- sweepers never announce the same crossing. (PL/pgSQL, checked when it runs: it names columns a
-- migration after the baseline adds, and the function files are applied to databases on their way
-- there too.) Markers
-- move whether or not an endpoint is listening; the event is appended only while one is.
--
-- Why not in the claim's own transaction: two claims taking the last two tickets each see the
-- other's ticket as still AVAILABLE (READ COMMITTED, SKIP LOCKED), so neither can tell that it sold
-- the campaign out, and making the last claims wait for each other's rows can deadlock. The
-- announcement comes within one sweep interval instead, and survives any crash (the next sweep, on
-- any instance, makes it).
CREATE OR REPLACE FUNCTION "tessera_stock_events"() RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    appended INTEGER;
BEGIN
    -- The figures come from the counters, unlocked; only the campaigns whose markers they would
    -- change are then locked (SKIP LOCKED: one another sweeper or a close holds is left to the next
    -- sweep), and the markers are read again under the lock, so no announcement is made twice.
    WITH figures AS (
        SELECT cp.id, f.sold_out,
               cp.low_stock_threshold IS NOT NULL AND f.total > 0 AND f.available <= cp.low_stock_threshold AS low
          FROM tessera_campaign_counts(ARRAY(
                 SELECT x.id FROM campaigns x
                  WHERE x.status = 'OPEN' AND (x.sold_out_announced_at IS NULL OR x.low_stock_threshold IS NOT NULL OR x.low_stock_announced_at IS NOT NULL))) f
          JOIN campaigns cp ON cp.id = f.campaign_id
    ),
    locked AS (
        SELECT cp.id, cp.sold_out_announced_at AS was_sold_out, cp.low_stock_announced_at AS was_low
          FROM campaigns cp JOIN figures f ON f.id = cp.id
         WHERE (f.sold_out AND cp.sold_out_announced_at IS NULL) OR (f.low <> (cp.low_stock_announced_at IS NOT NULL))
           FOR UPDATE OF cp SKIP LOCKED
    ),
    verdicts AS (
        SELECT k.id, k.was_sold_out, k.was_low, f.sold_out, f.low FROM locked k JOIN figures f ON f.id = k.id
    ),
    changed AS (
        UPDATE campaigns cp
           SET sold_out_announced_at = CASE WHEN v.sold_out AND v.was_sold_out IS NULL THEN clock_timestamp() ELSE cp.sold_out_announced_at END,
               low_stock_announced_at = CASE WHEN v.low THEN COALESCE(v.was_low, clock_timestamp()) END
          FROM verdicts v
         WHERE cp.id = v.id
           AND ((v.sold_out AND v.was_sold_out IS NULL) OR (v.low AND v.was_low IS NULL) OR (NOT v.low AND v.was_low IS NOT NULL))
        RETURNING cp.id, v.sold_out AND v.was_sold_out IS NULL AS announce_sold_out, v.low AND v.was_low IS NULL AS announce_low
    ),
    evented AS (
        INSERT INTO webhook_events (type, campaign_id, data, created_at)
        SELECT e.type, c.id, tessera_campaign_event_data(c.id, 'OPEN'), clock_timestamp() + e.step * interval '1 microsecond'
          FROM changed c
         CROSS JOIN LATERAL (VALUES (0, 'CAMPAIGN_LOW_STOCK', c.announce_low), (1, 'CAMPAIGN_SOLD_OUT', c.announce_sold_out)) AS e(step, type, fire)
         WHERE e.fire AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled)
        RETURNING 1
    )
    SELECT count(*)::integer INTO appended FROM evented;
    RETURN appended;
END
$$;
