-- Keeps partner_quotas.live exact (the why of the count and of the credit rows: partner_quotas in
-- the baseline migration). A trigger on every status change, so that no path that makes an
-- allocation dead (release, sweeper, takeover of an expired hold) can forget it. A campaign without
-- quotas pays one primary-key probe of a small table per status change.
--
-- Becoming live: only an insert makes an allocation live, and tessera_record_allocations, which
-- inserts it, adds it to `live` itself (the caller's gate already locked the partner's quota row). Stopping being live: an append-only credit row
-- (inserts never wait), which the gate subtracts and tessera_expire_holds folds in.
CREATE OR REPLACE FUNCTION "tessera_count_live"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    was_live BOOLEAN := TG_OP = 'UPDATE' AND OLD.status IN ('HELD', 'ACTIVE');
    is_live BOOLEAN := NEW.status IN ('HELD', 'ACTIVE');
BEGIN
    IF is_live AND NOT was_live THEN
        UPDATE partner_quotas SET live = live + 1
         WHERE campaign_id = NEW.campaign_id AND partner_id = NEW.partner_id;
    ELSIF was_live AND NOT is_live THEN
        INSERT INTO partner_quota_credits (campaign_id, partner_id)
        SELECT NEW.campaign_id, NEW.partner_id
         WHERE EXISTS (SELECT 1 FROM partner_quotas q WHERE q.campaign_id = NEW.campaign_id AND q.partner_id = NEW.partner_id);
    END IF;
    RETURN NULL;
END
$$;

-- Dropped and created again in the transaction that applies this file (src/db/migrate.ts), so no
-- allocation write ever runs without it. (CREATE OR REPLACE TRIGGER would need PostgreSQL 14.)
DROP TRIGGER IF EXISTS "allocations_count_live" ON "allocations";
CREATE TRIGGER "allocations_count_live" AFTER UPDATE OF "status" ON "allocations"
    FOR EACH ROW EXECUTE FUNCTION "tessera_count_live"();
