// Package sqlset loads the SQL a package embeds: one statement per file
// under sql/, named after the Go function that runs it (blocking_tree.sql
// for BlockingTree), read once when the package initialises. The console
// shows operators the text a step ran, so the text in the file is the text
// that runs.
//
// A package keeps its files next to its code and reads them through one
// Set:
//
//	//go:embed sql/*.sql
//	var sqlFiles embed.FS
//
//	var queries = sqlset.New("audit", sqlFiles)
//
//	func sqlText(name string) string { return queries.Text(name) }
//
// A query whose text differs by server version has one file per variant,
// chosen by server_version_num (WithVariants, For).
//
// One and All run a statement and collect its rows into structs by column
// name, leaving each package to say in its own words what failed and to
// turn pgx.ErrNoRows into its own ErrNotFound.
package sqlset
