// Package migrations holds the console's numbered SQL migrations, embedded in
// the binary and applied with jackc/tern under an advisory lock.
//
// A released migration is never edited: change the schema with a new file.
package migrations
