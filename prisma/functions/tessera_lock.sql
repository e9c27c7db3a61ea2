-- Takes one advisory lock inside the transaction: of the class named p_class (tessera_advisory_class
-- numbers them and says in which order a transaction takes them), keyed by hashtext(p_key), shared
-- or exclusive. Every advisory lock Tessera takes in a transaction is taken through it.
--
-- One SQL expression, so that PostgreSQL inlines it into the statement that calls it: the class of
-- a constant name is folded in when the statement is planned, and a lock costs what
-- pg_advisory_xact_lock itself costs.
CREATE OR REPLACE FUNCTION "tessera_lock"(p_class TEXT, p_key TEXT, p_shared BOOLEAN DEFAULT false) RETURNS VOID
  LANGUAGE sql VOLATILE
AS $$
    SELECT CASE WHEN p_shared THEN pg_advisory_xact_lock_shared(tessera_advisory_class(p_class), hashtext(p_key))
                ELSE pg_advisory_xact_lock(tessera_advisory_class(p_class), hashtext(p_key)) END
$$;
