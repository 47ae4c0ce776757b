package migrations

import (
	"context"
	"io/fs"

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

// UpWithFS is UpWith over the migrations of fsys instead of the embedded
// ones, for tests of the migrator with migrations of their own.
func UpWithFS(ctx context.Context, conn *pgx.Conn, o Options, fsys fs.FS) (Status, error) {
	return upWith(ctx, conn, o, fsys)
}

// LoadFS loads the migrations of fsys as UpWith would, reporting what is
// wrong with them.
func LoadFS(fsys fs.FS) error {
	_, err := newMigratorFS(context.Background(), nil, fsys)
	return err
}
