-- 005: the audit chain's hashes are computed by the console, not by the
-- database.
--
-- Until now the chain trigger computed each event's hash in SQL, so anyone
-- who could write the table (its owner, a superuser) could rewrite history
-- and recompute every hash in SQL, and a check that trusted the database's
-- arithmetic would still pass. From here on the console computes the hash
-- in Go, optionally as an HMAC under a key the database never sees, and
-- `console audit verify` recomputes every hash in Go. The database only keeps
-- the chain in order: the trigger checks that a new event continues the
-- head (seq and prev_hash) and moves the head.
--
-- hash_alg says how each event was hashed:
--   sql-sha256   written before this migration (hash computed in SQL over
--                audit_event_canonical); Go reproduces that text to check it
--   sha256       sha256(prev_hash || canonical text) computed by the console
--   hmac-sha256  HMAC-SHA256 under the console's audit key of the same
-- Existing rows get sql-sha256 (ADD COLUMN with a default rewrites nothing);
-- new rows must name their algorithm.
ALTER TABLE audit_events
    ADD COLUMN hash_alg text NOT NULL DEFAULT 'sql-sha256'
    CHECK (hash_alg IN ('sql-sha256', 'sha256', 'hmac-sha256'));
ALTER TABLE audit_events ALTER COLUMN hash_alg DROP DEFAULT;

-- audit_chain_lock locks the chain head for the rest of the calling
-- transaction and returns what the next event needs to be hashed: the head,
-- the event's id and its timestamp. SECURITY DEFINER so a role with INSERT
-- on audit_events alone can call it.
CREATE FUNCTION audit_chain_lock(OUT last_seq bigint, OUT last_hash bytea, OUT next_id bigint, OUT at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    SELECT h.last_seq, h.last_hash INTO last_seq, last_hash FROM audit_chain_head h WHERE h.singleton FOR UPDATE;
    next_id := nextval(pg_get_serial_sequence('audit_events', 'id'));
    at := date_trunc('microseconds', clock_timestamp());
END
$$;

-- The chain trigger no longer hashes: it checks that the new event follows
-- the head it locked and moves the head to it.
CREATE OR REPLACE FUNCTION audit_events_chain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    head audit_chain_head;
BEGIN
    SELECT * INTO head FROM audit_chain_head WHERE singleton FOR UPDATE;
    IF NEW.hash_alg NOT IN ('sha256', 'hmac-sha256') THEN
        RAISE EXCEPTION 'audit events are hashed by the console (hash_alg sha256 or hmac-sha256), not %', NEW.hash_alg
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.seq IS DISTINCT FROM head.last_seq + 1 OR NEW.prev_hash IS DISTINCT FROM head.last_hash THEN
        RAISE EXCEPTION 'audit event seq % does not follow the chain head (seq %): lock the head with audit_chain_lock() first',
            NEW.seq, head.last_seq USING ERRCODE = 'check_violation';
    END IF;
    IF octet_length(NEW.hash) IS DISTINCT FROM 32 THEN
        RAISE EXCEPTION 'audit event hash must be 32 bytes' USING ERRCODE = 'check_violation';
    END IF;
    UPDATE audit_chain_head SET last_seq = NEW.seq, last_hash = NEW.hash WHERE singleton;
    RETURN NEW;
END
$$;
