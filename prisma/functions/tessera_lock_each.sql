-- Several locks of one class (tessera_lock), each key once, in the order of the keys' hashes: the
-- one order every transaction takes them in. NULL keys are skipped.
CREATE OR REPLACE FUNCTION "tessera_lock_each"(p_class TEXT, p_keys TEXT[], p_shared BOOLEAN DEFAULT false) RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_key TEXT;
BEGIN
    FOR v_key IN SELECT DISTINCT ON (hashtext(k), k) k FROM unnest(p_keys) k WHERE k IS NOT NULL ORDER BY hashtext(k), k LOOP
        PERFORM tessera_lock(p_class, v_key, p_shared);
    END LOOP;
END
$$;
