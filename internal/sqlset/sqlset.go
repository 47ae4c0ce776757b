package sqlset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DBTX is what a query function runs its statement on: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx all satisfy it, so one function serves a pool, the
// caller's transaction and a test transaction alike. Packages re-export it
// under their own name (type DBTX = sqlset.DBTX).
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Set is the statements of one package, by file name without ".sql". It is
// read-only after New and WithVariants, and safe for concurrent use.
type Set struct {
	pkg      string
	text     map[string]string
	variants map[string][]Variant
}

// New reads every sql/*.sql of fsys (each statement trimmed of surrounding
// space). pkg names the package in the panic of a missing query. A
// package without an sql folder, or a file that cannot be read, is a
// programming error: New panics, at the package's initialisation.
func New(pkg string, fsys fs.FS) *Set {
	names, err := fs.Glob(fsys, "sql/*.sql")
	if err != nil || len(names) == 0 {
		panic(fmt.Sprintf("%s: no embedded sql/*.sql files", pkg))
	}
	s := &Set{pkg: pkg, text: make(map[string]string, len(names))}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			panic(fmt.Sprintf("%s: read embedded %s: %v", pkg, n, err))
		}
		s.text[strings.TrimSuffix(path.Base(n), ".sql")] = strings.TrimSpace(string(b))
	}
	return s
}

// Text returns the statement in sql/name.sql. It panics when there is no
// such file: a misspelt name is a programming error that the first test
// running the query catches, and a map lookup keeps the hot paths that
// call Text per statement free of allocations.
func (s *Set) Text(name string) string {
	t, ok := s.text[name]
	if !ok {
		panic(fmt.Sprintf("%s: no embedded query %q", s.pkg, name))
	}
	return t
}

// Variant is a version-specific file of a query, used on servers whose
// server_version_num is MinVersion or later.
type Variant struct {
	MinVersion int
	File       string
}

// WithVariants declares, per query name, the files that run it by server
// version, oldest first; the first variant's MinVersion is the oldest
// server the query runs on at all (0: any). A query absent from variants
// has one file named after it. It panics when a variant's file is missing
// or the list is empty or out of order, and returns s for chaining.
func (s *Set) WithVariants(variants map[string][]Variant) *Set {
	for name, vs := range variants {
		if len(vs) == 0 {
			panic(fmt.Sprintf("%s: query %q has an empty variant list", s.pkg, name))
		}
		for i, v := range vs {
			s.Text(v.File)
			if i > 0 && v.MinVersion <= vs[i-1].MinVersion {
				panic(fmt.Sprintf("%s: variants of %q are not in ascending version order", s.pkg, name))
			}
		}
	}
	s.variants = variants
	return s
}

// ErrUnsupported is wrapped by the error of a query asked for on a server
// older than its oldest variant.
var ErrUnsupported = errors.New("not available on this PostgreSQL version")

// File returns the file name (without ".sql") that runs query name on a
// server of the given server_version_num, or an error wrapping
// ErrUnsupported that names the version needed. Version 0 means unknown and
// picks the newest variant. A name with no variants is its own file,
// whether or not such a file exists (Text panics on it later).
func (s *Set) File(name string, version int) (string, error) {
	vs, ok := s.variants[name]
	if !ok {
		return name, nil
	}
	if version == 0 {
		return vs[len(vs)-1].File, nil
	}
	if version < vs[0].MinVersion {
		return "", fmt.Errorf("%s needs PostgreSQL %d or later: %w", name, vs[0].MinVersion/10000, ErrUnsupported)
	}
	file := vs[0].File
	for _, v := range vs[1:] {
		if version >= v.MinVersion {
			file = v.File
		}
	}
	return file, nil
}

// For returns the statement of query name as it runs on a server of the
// given server_version_num (0: the newest variant). It errs, wrapping
// ErrUnsupported, when the server is too old for the query, and panics,
// like Text, when the query has no file at all.
func (s *Set) For(name string, version int) (string, error) {
	file, err := s.File(name, version)
	if err != nil {
		return "", err
	}
	return s.Text(file), nil
}

// Has reports whether name is a query of the set: a file of its own or a
// query with variants.
func (s *Set) Has(name string) bool {
	_, file := s.text[name]
	_, variants := s.variants[name]
	return file || variants
}
