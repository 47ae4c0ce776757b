// Package logbuf is a log sink a test reads while the code it runs is still
// writing: a server's or a child process's log, written from goroutines the
// test does not own.
package logbuf
