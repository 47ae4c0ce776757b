// Package archtest holds the tests that keep the module's shape: the import
// direction (queues, diagnostics, audit and migrations depend on no other
// part of the console but the small shared internal packages; views on
// nothing but templ; nothing imports web or cmd/console; the broker
// clients stay out of the engine package; within diagnostics, the finding
// rules read the catalog, the recorder and the collector read both, and
// never the other way; the packages under internal/ import no part of the
// console), and every embedded .sql file being run by some code.
package archtest
