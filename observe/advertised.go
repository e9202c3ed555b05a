package observe

import "time"

// AdvertisedWindow is one limit window an upstream answer advertised.
type AdvertisedWindow struct {
	// Limit is the window's size; -1 when the answer did not say.
	Limit int64
	// Remaining is what is left of it; -1 when the answer did not say.
	Remaining int64
	// Reset is how long until the window is whole again, from the answer.
	Reset time.Duration
}

// Advertised is what one upstream answer said about its source's rate
// limits (the x-ratelimit-* or anthropic-ratelimit-* headers): the
// account's headroom as the provider sees it, for the whole fleet.
type Advertised struct {
	// Scope and Source name the source that answered.
	Scope, Source string
	// Requests and Tokens are the request and token windows the answer
	// advertised; a window the answer did not mention has Limit and
	// Remaining -1.
	Requests, Tokens AdvertisedWindow
	// At is when the answer was received.
	At time.Time
}

// AdvertisedObserver receives the rate-limit figures of every upstream
// answer that carried any. An Observer that also implements it gets them;
// Multi, Async and the adapter of AsFull pass them on.
type AdvertisedObserver interface {
	// ObserveAdvertised is called with the figures of one answer.
	ObserveAdvertised(e Advertised)
}

// ObserveAdvertised passes e to o when it is an AdvertisedObserver.
func (a *adapter) ObserveAdvertised(e Advertised) {
	if ao, ok := a.o.(AdvertisedObserver); ok {
		ao.ObserveAdvertised(e)
	}
}

// ObserveAdvertised passes e to every member that is an AdvertisedObserver.
func (m *multi) ObserveAdvertised(e Advertised) {
	for _, o := range m.obs {
		if ao, ok := o.(AdvertisedObserver); ok {
			ao.ObserveAdvertised(e)
		}
	}
}

// ObserveAdvertised queues e.
func (a *AsyncObserver) ObserveAdvertised(e Advertised) { a.send(e) }
