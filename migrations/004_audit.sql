-- 004: operators, API tokens, sessions, incidents and the audit trail.
CREATE TABLE operators (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text        NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$'),
    password_hash text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    disabled      boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_login_at timestamptz
);

-- Only a hash of each token or session id is stored; the secret itself is
-- shown once.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL UNIQUE,
    token_hash   bytea       NOT NULL UNIQUE,
    role         text        NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE TABLE operator_sessions (
    id_hash     bytea PRIMARY KEY,
    operator_id bigint      NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX operator_sessions_expires_idx ON operator_sessions (expires_at);

CREATE TABLE incidents (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title        text        NOT NULL CHECK (title <> ''),
    status       text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    impact       text        NOT NULL DEFAULT '',
    slo          text        NOT NULL DEFAULT '',
    window_start timestamptz NOT NULL DEFAULT clock_timestamp(),
    window_end   timestamptz,
    opened_by    text        NOT NULL,
    opened_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    closed_by    text,
    closed_at    timestamptz,
    summary      text        NOT NULL DEFAULT ''
);

CREATE TABLE incident_evidence (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    incident_id bigint      NOT NULL REFERENCES incidents (id),
    step        text        NOT NULL,
    title       text        NOT NULL,
    sql_text    text        NOT NULL DEFAULT '',
    data        jsonb       NOT NULL DEFAULT '{}',
    captured_by text        NOT NULL,
    captured_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX incident_evidence_incident_idx ON incident_evidence (incident_id, captured_at);

-- audit_events is append-only and hash-chained. The BEFORE INSERT trigger
-- serialises writers on audit_chain_head (a row lock held until the writing
-- transaction ends), so concurrent actions cannot fork the chain, and sets
--   seq  = the previous event's seq + 1 (gapless, in commit order)
--   hash = sha256(prev_hash || canonical text of the event)
-- where the canonical text is the jsonb rendering of the event's fields
-- (jsonb orders keys deterministically). ids come from an identity and can
-- commit out of order, so the chain is walked by seq, not id. audit.Verify
-- recomputes every hash and checks that each prev_hash is the hash of the
-- event before it and that the head names the last event: an edited,
-- inserted or deleted row breaks one of the three.
CREATE TABLE audit_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seq         bigint      NOT NULL UNIQUE,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor       text        NOT NULL,
    role        text        NOT NULL,
    action      text        NOT NULL,
    target      text        NOT NULL DEFAULT '',
    params      jsonb       NOT NULL DEFAULT '{}',
    reason      text        NOT NULL DEFAULT '',
    preview     jsonb       NOT NULL DEFAULT '{}',
    result      jsonb       NOT NULL DEFAULT '{}',
    outcome     text        NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'refused')),
    error       text        NOT NULL DEFAULT '',
    incident_id bigint      REFERENCES incidents (id),
    prev_hash   bytea       NOT NULL,
    hash        bytea       NOT NULL
);
CREATE INDEX audit_events_action_idx ON audit_events (action, id);
CREATE INDEX audit_events_actor_idx ON audit_events (actor, id);
CREATE INDEX audit_events_target_idx ON audit_events (target, id);
CREATE INDEX audit_events_at_idx ON audit_events (at);
CREATE INDEX audit_events_incident_idx ON audit_events (incident_id, id) WHERE incident_id IS NOT NULL;

CREATE TABLE audit_chain_head (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_seq  bigint NOT NULL DEFAULT 0,
    last_hash bytea  NOT NULL
);
INSERT INTO audit_chain_head (last_hash) VALUES ('\x'::bytea);

CREATE FUNCTION audit_event_canonical(e audit_events) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
        'id', e.id, 'seq', e.seq,
        'at', to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'actor', e.actor, 'role', e.role, 'action', e.action, 'target', e.target,
        'params', e.params, 'reason', e.reason, 'preview', e.preview, 'result', e.result,
        'outcome', e.outcome, 'error', e.error, 'incident_id', e.incident_id)::text
$$;

-- SECURITY DEFINER: the console's role needs only INSERT on audit_events; it
-- cannot move the chain head itself.
CREATE FUNCTION audit_events_chain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    head audit_chain_head;
BEGIN
    SELECT * INTO head FROM audit_chain_head WHERE singleton FOR UPDATE;
    NEW.seq := head.last_seq + 1;
    NEW.prev_hash := head.last_hash;
    NEW.hash := sha256(head.last_hash || convert_to(audit_event_canonical(NEW), 'UTF8'));
    UPDATE audit_chain_head SET last_seq = NEW.seq, last_hash = NEW.hash WHERE singleton;
    RETURN NEW;
END
$$;

CREATE TRIGGER audit_events_chain BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_chain();

CREATE FUNCTION audit_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
