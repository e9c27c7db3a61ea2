-- Every campaign with RETURNED tickets, offered (tessera_offer_returned) by the sweeper every interval:
-- what a caller that died between its return and its offer left behind. One probe of an index that
-- is empty but for an instant when nothing is left behind.
CREATE OR REPLACE FUNCTION "tessera_offer_all_returned"() RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c UUID;
    offered INTEGER := 0;
BEGIN
    FOR c IN
        SELECT DISTINCT t.campaign_id FROM tickets t WHERE t.status = 'RETURNED' LIMIT 100
    LOOP
        offered := offered + tessera_offer_returned(c);
    END LOOP;
    RETURN offered;
END
$$;
