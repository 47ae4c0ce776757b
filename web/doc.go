// Package web is the console's HTTP server: echo routes, middleware
// (authentication, CSRF, security headers, request logging and metrics) and
// one thin handler per page or action. Handlers parse input, call one domain
// function, map the result to a view model and render it through the single
// render helper. All routes are listed in routes.go.
//
// # When the database stalls
//
// The console is most needed when its database is in trouble, so nothing
// that draws a page waits on it for long:
//
//   - dbWatch (dbwatch.go) shares one ping of the database, at most one a
//     second, each bounded by a second, and remembers since when pings have
//     failed. Pages read that without waiting: the frame leaves out what it
//     would have to ask the database (server version, the incident link) and
//     shows the banner instead.
//   - Session lookups (sessions.go) time out after a second and are cached
//     for 30 seconds by a digest of the session secret; while the database
//     does not answer, a session it confirmed within 10 minutes is still
//     accepted, so a stall neither hangs pages nor signs everyone out.
//     Signing out drops the entry at once; a session ended elsewhere (the
//     command line, another console) is refused within the 30 seconds.
//   - Panels and the overview ask the watch first and answer at once with
//     "Database not answering" (keeping their title) rather than send a
//     query to a frozen server. app.js keeps the rows a panel showed last,
//     marks them "stale since 06:57:26 UTC, retrying", and retries after 2,
//     4, 8, 16 and then every 30 seconds until a good answer replaces them.
//   - Writes (actions, sign-in, sign-out) and the pages that read the
//     database go through needsDatabase: while the ping fails they get a 503
//     saying nothing was changed, within a second, instead of hanging.
//   - /readyz shares its own bounded check and answers within a second.
//
// The banner ("Database not answering for 12s") is driven by a status
// endpoint, GET /status/database, rather than by panel answers: the
// endpoint is one shared ping, so it costs the database nothing more while
// it answers, it says when the outage started (the count survives reloads
// and is the same in every tab), and pages without panels show the banner
// too. app.js polls it every 10 seconds, every 2 while the database is down,
// and at once when a panel's refresh fails.
//
// # Time travel
//
// Evidence pages (the overview, runbook steps, Database pages, queue pages,
// the outbox) take the time picker's choice from ?at=, ?window= or
// ?from=&to= (parseTravel, timetravel.go) and show the time bar. In the
// past, a panel
// is drawn from the recorded sample at or before the moment under a
// "History · at …" marker (pastPanel), with no refresh and no action (the
// page acts as historyRole); a check history does not keep shows a "Not
// recorded" note, never live rows. Charts then span the picked range from
// recorded samples (pastTileTrends). app.js carries the choice to links
// between these pages.
package web
