// Package errs defines the errors of the lower packages (admission, the
// retry loops, config, the transports), low in the import graph so that they
// need not import the root package. Each mirrors, field for field, a public
// type of package pgw, which converts the errors it returns to the public
// types; until then each type's As method lets errors.As reach its public
// twin (see Public).
package errs
