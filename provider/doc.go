// Package provider holds what pgw knows of each upstream API family — the
// credential header, the forms of Retry-After, the shape of error bodies — in
// one place, used by the typed transports and by the governed http.Client
// alike, so that no answer is read two ways.
//
// Every function here is safe for concurrent use.
package provider
