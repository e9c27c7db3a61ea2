-- Reservations (holds), multi-ticket claims, partner quotas and reports.

-- A confirmed hold keeps the time it became ACTIVE (timeline, soldOutAt).
ALTER TABLE "allocations" ADD COLUMN "confirmed_at" TIMESTAMPTZ(6);
-- claimTickets writes several allocations for one request, all under the request's idempotency key:
-- the key is unique per (campaign, partner, key, position in the request).
ALTER TABLE "allocations" ADD COLUMN "request_index" INTEGER NOT NULL DEFAULT 0;
DROP INDEX "allocations_campaign_id_partner_id_idempotency_key_key";
CREATE UNIQUE INDEX "allocations_campaign_id_partner_id_idempotency_key_request_index_key"
    ON "allocations"("campaign_id", "partner_id", "idempotency_key", "request_index");
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_confirmed_only_when_active"
    CHECK ("confirmed_at" IS NULL OR "status" IN ('ACTIVE', 'RELEASED'));

-- Holds by expiry: the claim path takes over expired holds, the sweeper returns them to the pool.
CREATE INDEX "allocations_held_expiry_idx" ON "allocations"("campaign_id", "expires_at") WHERE "status" = 'HELD';
-- Timeline and soldOutAt: ACTIVE allocations by the time they became ACTIVE.
CREATE INDEX "allocations_active_timeline_idx" ON "allocations"("campaign_id", (COALESCE("confirmed_at", "allocated_at"))) WHERE "status" = 'ACTIVE';

-- When the campaign's pool first had nothing available and nothing held (recorded by the release
-- that ends a sell-out; before that it is computed when read).
ALTER TABLE "campaigns" ADD COLUMN "sold_out_at" TIMESTAMPTZ(6);

-- A partner's cap in one campaign, and its live (HELD or ACTIVE) allocations there, counted, not
-- recounted (CORRECTNESS.md 10): checking a quota is a few small reads, not a count of the
-- partner's allocations.
--
-- How the count stays exact without deadlocks: an allocation becomes live only in a claim, which
-- holds the partner's quota row (the gate locks it), so the +1 goes straight into `live`. It stops
-- being live in statements that hold no quota row — a release, the sweeper — or that hold *another*
-- partner's (a claim taking over an expired hold): if those updated the row, two claims taking over
-- each other's partners' holds would wait for each other's rows. So the -1 is an append-only credit
-- row instead (inserts never wait), which the gate subtracts and the sweeper folds into `live`.
CREATE TABLE "partner_quotas" (
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    "quota" INTEGER NOT NULL,
    "live" INTEGER NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "partner_quotas_pkey" PRIMARY KEY ("campaign_id", "partner_id"),
    CONSTRAINT "partner_quotas_quota_non_negative" CHECK ("quota" >= 0)
);
ALTER TABLE "partner_quotas" ADD CONSTRAINT "partner_quotas_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "partner_quotas" ADD CONSTRAINT "partner_quotas_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "partner_quota_credits" (
    "id" BIGSERIAL NOT NULL,
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    CONSTRAINT "partner_quota_credits_pkey" PRIMARY KEY ("campaign_id", "id")
);
CREATE INDEX "partner_quota_credits_campaign_id_partner_id_idx" ON "partner_quota_credits"("campaign_id", "partner_id");

-- Keeps the count. A trigger rather than code in each statement, so that no path that makes an
-- allocation live or dead (claim, hold, takeover of an expired hold, release, sweeper) can forget
-- it. A campaign without quotas pays one primary-key probe of a small table per allocation write.
CREATE FUNCTION "tessera_count_live"() RETURNS trigger
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
CREATE TRIGGER "allocations_count_live" AFTER INSERT OR UPDATE OF "status" ON "allocations"
    FOR EACH ROW EXECUTE FUNCTION "tessera_count_live"();

-- The claim gate learns quotas: with a quota row for (campaign, partner), the row is locked (so a
-- partner's parallel claims in that campaign are counted one after the other, exactly) and
-- live + quantity must stay within the quota, `live` net of the credits not yet folded in and of
-- the partner's holds that have expired but were not ended yet. A hold past its expiry counts for
-- neither the holder limit nor the quota: it is over from that instant.
-- With quantity 0 (confirmHold: a confirmation makes nothing newly live) only the campaign is
-- checked — no holder or quota lock, so a confirmation never waits behind the partner's claims.
-- The holder and the quota get a quantity each: a group claim (db/claimBatch.ts) gives its k-th
-- request of one holder (of one partner) the quantity k, so that requests of one batch count each
-- other without having been inserted yet.
-- Same locks, same order as before otherwise (see migration 20261129000000_core).
DROP FUNCTION "tessera_claim_gate"(UUID, UUID, TEXT, TEXT, INTEGER);
CREATE FUNCTION "tessera_claim_gate"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_idempotency_key TEXT,
    p_quantity INTEGER,
    p_quota_quantity INTEGER
) RETURNS TABLE (verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c campaigns%ROWTYPE;
    live INTEGER;
    q partner_quotas%ROWTYPE;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1, hashtext(p_campaign_id::text));

    IF p_idempotency_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(2, hashtext(p_partner_id::text || ':' || p_idempotency_key));
        SELECT 'PRIOR', a.campaign_id, a.id INTO verdict, prior_campaign_id, prior_allocation_id
          FROM allocations a
         WHERE a.partner_id = p_partner_id AND a.idempotency_key = p_idempotency_key
         ORDER BY a.request_index
         LIMIT 1;
        IF FOUND THEN RETURN NEXT; RETURN; END IF;
    END IF;

    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND THEN
        verdict := 'CAMPAIGN_NOT_FOUND'; RETURN NEXT; RETURN;
    END IF;
    IF c.status <> 'OPEN'
       OR (c.opens_at IS NOT NULL AND clock_timestamp() < c.opens_at)
       OR (c.closes_at IS NOT NULL AND clock_timestamp() >= c.closes_at) THEN
        verdict := 'CAMPAIGN_NOT_OPEN'; RETURN NEXT; RETURN;
    END IF;

    IF p_quantity > 0 AND c.per_holder_limit IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(3, hashtext(p_campaign_id::text || ':' || p_partner_id::text || ':' || p_holder));
        SELECT count(*) INTO live
          FROM allocations a
         WHERE a.campaign_id = p_campaign_id AND a.partner_id = p_partner_id AND a.holder = p_holder
           AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp()));
        IF live + p_quantity > c.per_holder_limit THEN
            verdict := 'HOLDER_LIMIT_REACHED'; RETURN NEXT; RETURN;
        END IF;
    END IF;

    IF p_quota_quantity > 0 THEN
        SELECT * INTO q FROM partner_quotas WHERE campaign_id = p_campaign_id AND partner_id = p_partner_id FOR UPDATE;
        IF FOUND THEN
            live := q.live
                  - (SELECT count(*) FROM partner_quota_credits k
                      WHERE k.campaign_id = p_campaign_id AND k.partner_id = p_partner_id)
                  - (SELECT count(*) FROM allocations a
                      WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD'
                        AND a.expires_at <= clock_timestamp() AND a.partner_id = p_partner_id);
            IF live + p_quota_quantity > q.quota THEN
                verdict := 'PARTNER_QUOTA_REACHED'; RETURN NEXT; RETURN;
            END IF;
        END IF;
    END IF;

    verdict := 'OK'; RETURN NEXT;
END
$$;

-- The sweeper: returns expired holds' tickets to the pool, a batch per campaign, SKIP LOCKED so
-- that it never waits for (or races) a claim taking over the same hold — whoever locks the hold
-- first ends it, exactly once. The campaign gate is taken (shared) before any row, as every
-- statement that changes which allocations are live does.
CREATE FUNCTION "tessera_expire_holds"(p_batch INTEGER) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c UUID;
    swept INTEGER := 0;
    n INTEGER;
BEGIN
    FOR c IN
        SELECT DISTINCT a.campaign_id FROM allocations a
         WHERE a.status = 'HELD' AND a.expires_at <= clock_timestamp()
         LIMIT 100
    LOOP
        PERFORM pg_advisory_xact_lock_shared(1, hashtext(c::text));
        WITH expired AS (
            SELECT a.campaign_id, a.id, a.ticket_id FROM allocations a
             WHERE a.campaign_id = c AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
             ORDER BY a.expires_at
             LIMIT p_batch
             FOR UPDATE SKIP LOCKED
        ),
        lapsed AS (
            UPDATE allocations a SET status = 'EXPIRED'
              FROM expired e
             WHERE a.campaign_id = e.campaign_id AND a.id = e.id AND a.status = 'HELD'
            RETURNING a.campaign_id, a.ticket_id
        )
        UPDATE tickets t SET status = 'AVAILABLE'
          FROM lapsed l
         WHERE t.campaign_id = l.campaign_id AND t.id = l.ticket_id AND t.status = 'HELD';
        GET DIAGNOSTICS n = ROW_COUNT;
        swept := swept + n;
    END LOOP;

    -- Fold the quota credits into `live`. Deleting before updating, the same order as
    -- setPartnerQuota: credits, then the quota row.
    WITH folded AS (
        DELETE FROM partner_quota_credits RETURNING campaign_id, partner_id
    )
    UPDATE partner_quotas q SET live = q.live - f.n
      FROM (SELECT campaign_id, partner_id, count(*) AS n FROM folded GROUP BY campaign_id, partner_id) f
     WHERE q.campaign_id = f.campaign_id AND q.partner_id = f.partner_id;
    RETURN swept;
END
$$;
