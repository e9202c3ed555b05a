// Package respsink is where an attempt's response sink sits in its ctx: the
// key, and the form a sink may take besides a function so that the gateway
// installs one per attempt without allocating a closure and a value
// context for it.
package respsink

import "net/http"

// Key is the ctx key of the response sink.
type Key struct{}

// Receiver is a response sink that is a method of an object the attempt
// allocates anyway.
type Receiver interface {
	// Receive is called with the status and headers of the attempt's
	// upstream response.
	Receive(status int, h http.Header)
}
