// Package errs defines pgw's public error types low in the import graph, so
// that admission, the retry loops and config can return them without
// importing the root package, which re-exports each with a type alias
// (errors.As works the same through either name).
package errs
