package migrations

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// UpTo applies the migrations up to and including version, for tests of
// one migration against the schema before it.
func UpTo(ctx context.Context, conn *pgx.Conn, version int32) error {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return err
	}
	return m.MigrateTo(ctx, version)
}
