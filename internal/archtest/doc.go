// Package archtest holds the test that keeps the import direction of
// DESIGN.md section 2: queues, diagnostics, audit and migrations depend on no
// other part of the console; views on nothing but templ; nothing imports web
// or cmd/console.
package archtest
