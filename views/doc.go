// Package views holds the console's templ components and the view models they
// render. Views are pure: a component takes one view-model struct, already
// formatted for display, and does no I/O. Nothing here reads the clock or
// knows about the database.
package views
