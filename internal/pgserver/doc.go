// Package pgserver runs a private PostgreSQL server from the server binaries
// installed on the machine. It is the console's embedded default and the test
// harness's server.
//
// The server listens on 127.0.0.1 only, on a port chosen at start, with no Unix
// socket. When the process runs as root, PostgreSQL (which refuses root) runs
// as an unprivileged account, and the cluster folder is owned by it. When that
// account cannot reach the data folder (a checkout in root's home), the cluster
// is kept under /var/lib/console instead, in a folder named after the data
// folder, and found there again at the next start; see Server.Relocation.
package pgserver
