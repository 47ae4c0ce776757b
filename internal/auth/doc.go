// Package auth stores the console's operator accounts, browser sessions and
// API tokens. Passwords are bcrypt hashes; sessions and tokens are random
// secrets of which only a SHA-256 hash is stored, so a database dump does not
// let anyone sign in.
package auth
