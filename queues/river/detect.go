package river

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgconsole/console/internal/sqlset"
)

// Schema is what Detect found of River's schema.
type Schema struct {
	// Present: river_job, river_queue and river_leader all exist, which is
	// what the console reads.
	Present bool
	// Missing names the tables of those (and river_migration) that do not
	// exist, when some do: a schema half migrated, or another search path.
	Missing []string
	// Version is the newest River migration applied (0 when unknown).
	Version int
}

// MinVersion is the oldest River migration whose tables the console reads
// (river_queue arrived in migration 4, migration lines in 5).
const MinVersion = 5

// detectRow is the row of detect.sql.
type detectRow struct {
	HasJob       bool `db:"has_job"`
	HasQueue     bool `db:"has_queue"`
	HasLeader    bool `db:"has_leader"`
	HasMigration bool `db:"has_migration"`
}

// Detect says whether db holds River's schema (as its search path resolves
// table names) and at which migration version. Only the catalog and
// river_migration are read.
func Detect(ctx context.Context, db sqlset.DBTX) (Schema, error) {
	r, err := sqlset.One[detectRow](ctx, db, sqlText("detect"))
	if err != nil {
		return Schema{}, fmt.Errorf("look for River's tables: %w", err)
	}
	var s Schema
	for _, t := range []struct {
		name string
		ok   bool
	}{{"river_job", r.HasJob}, {"river_queue", r.HasQueue}, {"river_leader", r.HasLeader}, {"river_migration", r.HasMigration}} {
		if !t.ok {
			s.Missing = append(s.Missing, t.name)
		}
	}
	if len(s.Missing) == 4 {
		return Schema{}, nil
	}
	s.Present = r.HasJob && r.HasQueue && r.HasLeader
	if r.HasMigration {
		if err := db.QueryRow(ctx, sqlText("migration_version")).Scan(&s.Version); err != nil {
			return s, fmt.Errorf("read River's migration version: %w", err)
		}
	}
	return s, nil
}

// Check refuses a schema the console cannot read, with what to do.
func (s Schema) Check() error {
	if len(s.Missing) > 0 {
		return fmt.Errorf("River's schema is incomplete: %s missing (migrate it with `river migrate-up`, or set search_path in DATABASE_URL to River's schema)",
			strings.Join(s.Missing, ", "))
	}
	if s.Version < MinVersion {
		return fmt.Errorf("River's schema is at migration %d; the console reads migration %d or later: run `river migrate-up`", s.Version, MinVersion)
	}
	return nil
}
