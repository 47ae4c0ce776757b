// Package ownpid keeps the backend pids of a process's own database
// connections. The console recognises its own sessions by pid, never by
// application_name (any client may call itself "console-..."): the
// diagnostics leave their own backends out of the views they show, and the
// backend actions refuse to signal any of the console's connections.
package ownpid
