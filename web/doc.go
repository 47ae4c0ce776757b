// Package web is the console's HTTP server: echo routes, middleware
// (authentication, CSRF, security headers, request logging and metrics) and
// one thin handler per page or action. Handlers parse input, call one domain
// function, map the result to a view model and render it through the single
// render helper. All routes are listed in routes.go.
package web
