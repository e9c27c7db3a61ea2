-- CAMPAIGN_SOLD_OUT and CAMPAIGN_LOW_STOCK (docs/WEBHOOKS.md), run by the sweeper of every instance
-- (src/sweeper.ts, every HOLD_SWEEP_INTERVAL_MS): for each OPEN campaign, from its figures
-- (tessera_campaign_counts; sold out as tessera_sold_out defines it: nothing available, allotted or
-- held that could come back — so no announcement while an allotment or a hold may still return tickets),
--   - sold out: the first time the campaign is sold out, once for good (sold_out_announced_at), as
--     soldOutAt is the first sell-out's; a release that ends a sell-out does not re-arm it;
--   - low stock: each time available falls to low_stock_threshold or below from above it
--     (low_stock_announced_at is set then, and cleared once available is above the threshold again,
--     which re-arms it).
-- The marker and the event are written in one transaction, on the campaign's row held locked: two
-- instances' sweepers never announce the same crossing. (PL/pgSQL, checked when it runs: it names
-- columns a migration after the baseline adds, and the function files are applied to databases on
-- their way there too.) Markers move whether or not an endpoint is listening; the event is appended
-- only while one is.
--
-- Statement by statement, not one modifying CTE, for Citus: campaigns is a reference table and
-- webhook_events is distributed, and Citus refuses a statement that updates one from a query of the
-- other, clock_timestamp() in an UPDATE, and a query joining a reference table to a function that
-- reads distributed tables (it would push the function to a worker). So the figures come from
-- tessera_campaign_counts alone, the markers from campaigns alone, and each campaign whose markers
-- change is then locked, updated (with the time as a value) and evented on its own — on plain
-- PostgreSQL the common tick (nothing changes) still costs one read of campaigns and the counts.
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
    appended INTEGER := 0;
    v_ids UUID[];
    v_thresholds INTEGER[];
    v_sold_markers TIMESTAMPTZ[];
    v_low_markers TIMESTAMPTZ[];
    r RECORD;
    was_sold_out TIMESTAMPTZ;
    was_low TIMESTAMPTZ;
    announce_sold_out BOOLEAN;
    announce_low BOOLEAN;
    v_now TIMESTAMPTZ;
    listening BOOLEAN;
    v_data JSONB;
BEGIN
    -- The figures come from the counters, unlocked; only the campaigns whose markers they would
    -- change are then locked (SKIP LOCKED: one another sweeper or a close holds is left to the next
    -- sweep), and the markers are read again under the lock, so no announcement is made twice.
    SELECT array_agg(x.id), array_agg(x.low_stock_threshold), array_agg(x.sold_out_announced_at), array_agg(x.low_stock_announced_at)
      INTO v_ids, v_thresholds, v_sold_markers, v_low_markers
      FROM campaigns x
     WHERE x.status = 'OPEN' AND (x.sold_out_announced_at IS NULL OR x.low_stock_threshold IS NOT NULL OR x.low_stock_announced_at IS NOT NULL);
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    FOR r IN
        SELECT v.id, v.sold_out, v.low
          FROM (SELECT f.campaign_id AS id, f.sold_out,
                       k.threshold IS NOT NULL AND f.total > 0 AND f.available <= k.threshold AS low,
                       k.sold_marker, k.low_marker
                  FROM tessera_campaign_counts(v_ids) f
                  JOIN unnest(v_ids, v_thresholds, v_sold_markers, v_low_markers) AS k(id, threshold, sold_marker, low_marker)
                    ON k.id = f.campaign_id) v
         WHERE (v.sold_out AND v.sold_marker IS NULL) OR (v.low <> (v.low_marker IS NOT NULL))
    LOOP
        SELECT cp.sold_out_announced_at, cp.low_stock_announced_at INTO was_sold_out, was_low
          FROM campaigns cp
         WHERE cp.id = r.id
           FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        announce_sold_out := r.sold_out AND was_sold_out IS NULL;
        announce_low := r.low AND was_low IS NULL;
        CONTINUE WHEN NOT (announce_sold_out OR announce_low OR (NOT r.low AND was_low IS NOT NULL));
        v_now := clock_timestamp();
        UPDATE campaigns
           SET sold_out_announced_at = CASE WHEN announce_sold_out THEN v_now ELSE was_sold_out END,
               low_stock_announced_at = CASE WHEN r.low THEN COALESCE(was_low, v_now) END
         WHERE id = r.id;
        CONTINUE WHEN NOT (announce_sold_out OR announce_low);
        IF listening IS NULL THEN
            listening := EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled);
        END IF;
        CONTINUE WHEN NOT listening;
        v_data := tessera_campaign_event_data(r.id, 'OPEN');
        -- LOW_STOCK first when both: a microsecond apart, so the dispatcher orders them so.
        IF announce_low THEN
            INSERT INTO webhook_events (type, campaign_id, data, created_at) VALUES ('CAMPAIGN_LOW_STOCK', r.id, v_data, v_now);
            appended := appended + 1;
        END IF;
        IF announce_sold_out THEN
            INSERT INTO webhook_events (type, campaign_id, data, created_at) VALUES ('CAMPAIGN_SOLD_OUT', r.id, v_data, v_now + interval '1 microsecond');
            appended := appended + 1;
        END IF;
    END LOOP;
    RETURN appended;
END
$$;
