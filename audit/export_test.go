package audit

import "context"

// ExpectedHashOf recomputes event id's hash from its stored contents the
// way the console does (under key, or unkeyed when key is nil), as a forger
// who knows the algorithm would: tests use it to rewrite rows consistently.
func ExpectedHashOf(ctx context.Context, db DBTX, id int64, key []byte) ([]byte, error) {
	var r chainEvent
	err := db.QueryRow(ctx, `SELECT e.seq, e.id, e.at, e.actor, e.role, e.action, e.target, e.params::text, e.reason,
		e.preview::text, e.result::text, e.outcome, e.error, e.incident_id, e.prev_hash, e.hash, e.hash_alg
		FROM audit_events e WHERE id = $1`, id).
		Scan(&r.Seq, &r.ID, &r.At, &r.Actor, &r.Role, &r.Action, &r.Target, &r.Params, &r.Reason,
			&r.Preview, &r.Result, &r.Outcome, &r.Error, &r.IncidentID, &r.PrevHash, &r.Hash, &r.Alg)
	if err != nil {
		return nil, err
	}
	return r.expectedHash(key)
}

// CanonicalSQLOf is event id's pre-005 canonical text as Go reproduces it.
func CanonicalSQLOf(ctx context.Context, db DBTX, id int64) (string, error) {
	var r chainEvent
	err := db.QueryRow(ctx, `SELECT e.seq, e.id, e.at, e.actor, e.role, e.action, e.target, e.params::text, e.reason,
		e.preview::text, e.result::text, e.outcome, e.error, e.incident_id
		FROM audit_events e WHERE id = $1`, id).
		Scan(&r.Seq, &r.ID, &r.At, &r.Actor, &r.Role, &r.Action, &r.Target, &r.Params, &r.Reason,
			&r.Preview, &r.Result, &r.Outcome, &r.Error, &r.IncidentID)
	if err != nil {
		return "", err
	}
	return string(r.canonicalSQL()), nil
}
