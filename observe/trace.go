package observe

import (
	"context"
	"net/http"
	"time"
)

// The values of CallStart.Operation and AttemptStart.Operation: what a
// governed call asks of its upstream. A call of a custom function (pgw.Call)
// has none.
const (
	OperationChat       = "chat"
	OperationEmbeddings = "embeddings"
	OperationOCR        = "ocr"
)

// CallStart is a governed call beginning, before its first admission round.
type CallStart struct {
	// Scope is the call's scope.
	Scope string
	// Operation is one of the Operation… constants; empty for a call of a
	// custom function.
	Operation string
	// Model is the model the caller asked for; empty when each source's
	// configured model is used.
	Model string
	// At is when the call began.
	At time.Time
}

// ContextObserver is an Observer that also follows each call through its
// context, as a tracer does: it sees the caller's ctx when a call starts and
// hands back the ctx the call runs under, and sees each attempt's ctx and
// hands back the ctx the attempt's request is sent under. The ends come with
// the ctx their start returned, so the observer keeps what it needs (a span)
// in it. pgw checks for the interface once, when it is built, calls these
// methods besides the Observer's own (ObserveAttempt still receives every
// record), and only for calls that find the observer enabled
// (EnabledObserver). Multi passes each ctx through its members in turn.
//
// The ctx StartAttempt returns is the transport's: a default transport adds
// the headers of the ctx's AttemptHooks (InjectHeaders) to the request.
type ContextObserver interface {
	Observer
	// StartCall is called when a call begins, with the caller's ctx; the
	// call's admission rounds, waits and attempts run under the ctx it
	// returns.
	StartCall(ctx context.Context, e CallStart) context.Context
	// StartAttempt is called when an admitted attempt begins, with the
	// call's ctx; the attempt runs under the ctx it returns.
	StartAttempt(ctx context.Context, e AttemptStart) context.Context
	// EndAttempt is called with StartAttempt's ctx when the attempt ends
	// (a chat stream's: when the stream ends).
	EndAttempt(ctx context.Context, e AttemptRecord)
	// EndWait is called with the call's ctx when a wait for a runnable
	// source ends.
	EndWait(ctx context.Context, e WaitEnd)
	// EndCall is called with StartCall's ctx when the call ends.
	EndCall(ctx context.Context, e CallResult)
}

// AsContext returns o as a ContextObserver, or nil when it is not one. A
// Multi is one when one of its members is, whether or not that member is a
// Full; so is the adapter of AsFull when the observer it wraps is one.
func AsContext(o Observer) ContextObserver {
	switch o := o.(type) {
	case *adapter:
		return AsContext(o.o)
	case *multi:
		for _, m := range o.obs {
			if AsContext(m) != nil {
				return o
			}
		}
		return nil
	case ContextObserver:
		return o
	}
	return nil
}

func (m *multi) StartCall(ctx context.Context, e CallStart) context.Context {
	for _, o := range m.obs {
		if c := AsContext(o); c != nil {
			ctx = c.StartCall(ctx, e)
		}
	}
	return ctx
}

func (m *multi) StartAttempt(ctx context.Context, e AttemptStart) context.Context {
	for _, o := range m.obs {
		if c := AsContext(o); c != nil {
			ctx = c.StartAttempt(ctx, e)
		}
	}
	return ctx
}

func (m *multi) EndAttempt(ctx context.Context, e AttemptRecord) {
	for _, o := range m.obs {
		if c := AsContext(o); c != nil {
			c.EndAttempt(ctx, e)
		}
	}
}

func (m *multi) EndWait(ctx context.Context, e WaitEnd) {
	for _, o := range m.obs {
		if c := AsContext(o); c != nil {
			c.EndWait(ctx, e)
		}
	}
}

func (m *multi) EndCall(ctx context.Context, e CallResult) {
	for _, o := range m.obs {
		if c := AsContext(o); c != nil {
			c.EndCall(ctx, e)
		}
	}
}

// AttemptHooks is what an observer asks of the transport that sends an
// attempt's request. A ContextObserver puts them in the attempt's ctx
// (WithAttemptHooks); a transport calls InjectHeaders and NoteResponseModel,
// which do nothing when the ctx carries none. Implementations must be safe
// for concurrent use.
type AttemptHooks interface {
	// InjectHeaders adds headers to the attempt's outgoing request, such
	// as the W3C trace context (traceparent).
	InjectHeaders(h http.Header)
	// NoteResponseModel reports the model the upstream says answered.
	NoteResponseModel(model string)
}

type hooksKey struct{}

// WithAttemptHooks returns ctx carrying h for the transport of the attempt
// that runs under it. Hooks already in ctx (an outer observer's) are called
// too, h's first.
func WithAttemptHooks(ctx context.Context, h AttemptHooks) context.Context {
	if outer, ok := ctx.Value(hooksKey{}).(AttemptHooks); ok {
		h = hookPair{h, outer}
	}
	return context.WithValue(ctx, hooksKey{}, h)
}

type hookPair [2]AttemptHooks

func (p hookPair) InjectHeaders(h http.Header) {
	p[0].InjectHeaders(h)
	p[1].InjectHeaders(h)
}

func (p hookPair) NoteResponseModel(m string) {
	p[0].NoteResponseModel(m)
	p[1].NoteResponseModel(m)
}

// InjectHeaders adds the headers of ctx's AttemptHooks to h: a transport
// calls it for each request it sends for an attempt. Without hooks it does
// nothing.
func InjectHeaders(ctx context.Context, h http.Header) {
	if hk, ok := ctx.Value(hooksKey{}).(AttemptHooks); ok {
		hk.InjectHeaders(h)
	}
}

// NoteResponseModel passes the model named in an upstream's answer to ctx's
// AttemptHooks; without hooks, or for an empty model, it does nothing.
func NoteResponseModel(ctx context.Context, model string) {
	if model == "" {
		return
	}
	if hk, ok := ctx.Value(hooksKey{}).(AttemptHooks); ok {
		hk.NoteResponseModel(model)
	}
}
