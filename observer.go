package pgw

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
)

// The observer types, re-exported from package observe so that an Observer
// can be written against this package alone. Hand an Observer to the
// gateway with WithObserver; it also receives the optional events whose
// interfaces it implements: attempt starts, gate rejections, waits, call
// results, hedging events and advertised rate limits (AttemptStartObserver,
// RejectionObserver, WaitObserver, CallObserver, HedgeObserver,
// AdvertisedObserver), and follows each call through its ctx when it is a
// ContextObserver. Wrap an observer that does more than update counters in
// observe.Async, so that it never slows a call.
type (
	// Observer receives attempt records and breaker state changes, called
	// synchronously on the calls' goroutines, outside every lock, possibly
	// concurrently: it must be safe for concurrent use and quick. A panic
	// in it on a call's goroutine goes on to the caller; on a goroutine of
	// pgw's own (a hedged attempt's after its race, the outcome writer's,
	// the hook that closes a stream when its ctx ends) it is recovered and
	// logged at Warn, redacted.
	Observer = observe.Observer
	// ObserverFuncs adapts functions to the Observer interface and its
	// optional attempt-start, rejection, wait, call and hedge interfaces; a
	// nil field ignores its events.
	ObserverFuncs = observe.Funcs
	// AttemptRecord is one finished attempt of a governed call.
	AttemptRecord = observe.AttemptRecord
	// AttemptStart is an admitted attempt beginning on a source.
	AttemptStart = observe.AttemptStart
	// StateChange is a breaker transition of one source, as this process saw
	// it in a gate answer.
	StateChange = observe.StateChange
	// CallResult is the end of one governed call (each embedding
	// sub-batch and OCR page is a call of its own).
	CallResult = observe.CallResult
	// Rejection is one source an admission round skipped, and why.
	Rejection = observe.Rejection
	// WaitStart and WaitEnd bracket a call's wait for a runnable source.
	WaitStart = observe.WaitStart
	// WaitEnd is the end of a wait: a source admitted, or the call gave up.
	WaitEnd = observe.WaitEnd
	// CallStart is a governed call beginning, before its first admission
	// round: what a ContextObserver's StartCall receives.
	CallStart = observe.CallStart
	// Hedge is one hedging event of a call (Event is one of the Hedge…
	// constants).
	Hedge = observe.Hedge
	// Advertised is what one upstream answer said about its source's rate
	// limits.
	Advertised = observe.Advertised
	// AdvertisedWindow is one limit window an upstream answer advertised.
	AdvertisedWindow = observe.AdvertisedWindow

	// AttemptStartObserver is an Observer that also wants attempt starts.
	AttemptStartObserver = observe.AttemptStartObserver
	// RejectionObserver is an Observer that also wants the sources an
	// admission round skipped.
	RejectionObserver = observe.RejectionObserver
	// WaitObserver is an Observer that also wants a call's waits for a
	// runnable source.
	WaitObserver = observe.WaitObserver
	// CallObserver is an Observer that also wants each call's result.
	CallObserver = observe.CallObserver
	// HedgeObserver is an Observer that also wants the hedging events of
	// the scopes that hedge.
	HedgeObserver = observe.HedgeObserver
	// AdvertisedObserver is an Observer that also wants the rate-limit
	// figures of every upstream answer that carried any.
	AdvertisedObserver = observe.AdvertisedObserver
	// EnabledObserver is an Observer that can say it would ignore every
	// event of a call starting now.
	EnabledObserver = observe.EnabledObserver
	// ContextObserver is an Observer that also follows each call and
	// attempt through its ctx, as a tracer does.
	ContextObserver = observe.ContextObserver
	// HedgeContextObserver is a ContextObserver that also wants each
	// hedging event with the ctx of its call.
	HedgeContextObserver = observe.HedgeContextObserver
)

// The values of Hedge.Event.
const (
	// HedgeFired: a call's attempt went the hedge delay without its first
	// chunk, and a hedge attempt started on Hedge.Source.
	HedgeFired = observe.HedgeFired
	// HedgeWon: the hedge delivered first; its answer is the call's.
	HedgeWon = observe.HedgeWon
	// HedgeWasted: the hedge did not deliver first.
	HedgeWasted = observe.HedgeWasted
	// HedgeCanceled: the call ended (its ctx, Close, a panic, or another
	// attempt's caller error) while the hedge ran, before any attempt
	// delivered.
	HedgeCanceled = observe.HedgeCanceled
	// HedgeSkippedBudget: a hedge was due but the scope's hedge budget was
	// spent.
	HedgeSkippedBudget = observe.HedgeSkippedBudget
	// HedgeSkippedNoSource: a hedge was due but no other source was
	// admitted.
	HedgeSkippedNoSource = observe.HedgeSkippedNoSource
)

// The values of CallStart.Operation and AttemptStart.Operation; a call of a
// custom function (Call) has none.
const (
	OperationChat       = observe.OperationChat
	OperationEmbeddings = observe.OperationEmbeddings
	OperationOCR        = observe.OperationOCR
)

// The values of AttemptRecord.Outcome: the retry classes, plus
// OutcomeAbandoned for a chat stream closed before its end, OutcomeClosed
// for an attempt that the gateway's Close ended, OutcomePanic for an
// attempt function that panicked, and OutcomeHedgeLost for an attempt that
// lost a hedge race (cancelled and given back, never a failure).
const (
	OutcomeSuccess     = observe.OutcomeSuccess
	OutcomeFailure     = observe.OutcomeFailure
	OutcomeThrottle    = observe.OutcomeThrottle
	OutcomeFatal       = observe.OutcomeFatal
	OutcomeCallerError = observe.OutcomeCallerError
	OutcomeCanceled    = observe.OutcomeCanceled
	OutcomeAbandoned   = observe.OutcomeAbandoned
	OutcomeClosed      = observe.OutcomeClosed
	OutcomePanic       = observe.OutcomePanic
	OutcomeHedgeLost   = observe.OutcomeHedgeLost
)

// The values of CallResult.Result.
const (
	ResultSuccess        = observe.ResultSuccess
	ResultCircuitOpen    = observe.ResultCircuitOpen
	ResultQuotaExhausted = observe.ResultQuotaExhausted
	ResultStalled        = observe.ResultStalled
	ResultUnavailable    = observe.ResultUnavailable
	ResultCallerError    = observe.ResultCallerError
	ResultCanceled       = observe.ResultCanceled
	ResultAbandoned      = observe.ResultAbandoned
	ResultClosed         = observe.ResultClosed
	ResultError          = observe.ResultError
)

// attemptLog logs every attempt at Debug (admission logs the waits and the
// state changes); the gateway hands it to the loops with the caller's
// observer. Safe for concurrent use.
type attemptLog struct {
	observe.Nop
	log *slog.Logger
	// creds are each source's credentials by scope and source
	// (provider.Credentials), redacted from a failed attempt's error text:
	// the error of a Call function (an SDK's, say) may quote the URL or
	// headers it sent.
	creds credIndex
}

// credentials returns the credentials of scope's source, or of every source
// of scope when source is empty.
func (g *GatewayClient) credentials(scope, source string) []string {
	if g.creds == nil {
		return nil
	}
	return g.creds(scope, source)
}

// credIndex answers with the credentials, in the clear, of a scope's
// source, or of every source of the scope when source is "". It is a func,
// closed over the index, so that printing a struct that holds it (%v or
// %+v of a *GatewayClient, which fmt opens, unexported fields included)
// shows an address under every verb, never a key.
type credIndex func(scope, source string) []string

// sourceCredentials returns provider.Credentials of every source of s with
// any, by scope and source name.
func sourceCredentials(s Settings) credIndex {
	out := map[string]map[string][]string{}
	for _, sc := range s.Scopes {
		for _, src := range sc.Sources {
			if c := provider.Credentials(src); len(c) > 0 {
				if out[sc.Name] == nil {
					out[sc.Name] = map[string][]string{}
				}
				out[sc.Name][src.Name] = c
			}
		}
	}
	return func(scope, source string) []string {
		if source != "" {
			return out[scope][source]
		}
		var all []string
		for _, c := range out[scope] {
			all = append(all, c...)
		}
		return all
	}
}

// credentials returns the credentials of scope's source; none without an
// index.
func (l attemptLog) credentials(scope, source string) []string {
	if l.creds == nil {
		return nil
	}
	return l.creds(scope, source)
}

// Enabled reports whether the logger takes Debug lines now: when it does
// not, and there is no other observer, a call builds no reports at all.
func (l attemptLog) Enabled() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }

func (l attemptLog) ObserveAttempt(a AttemptRecord) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := make([]slog.Attr, 0, 11)
	attrs = append(attrs,
		slog.String("scope", a.Scope),
		slog.String("source", a.Source),
		slog.Int("attempt", a.Attempt),
		slog.String("outcome", a.Outcome),
		slog.Duration("latency", a.Latency.Round(time.Microsecond)))
	if a.Status > 0 {
		attrs = append(attrs, slog.Int("status", a.Status))
	}
	if a.RetryAfter > 0 {
		attrs = append(attrs, slog.Duration("retry_after", a.RetryAfter))
	}
	if a.Probe {
		attrs = append(attrs, slog.Bool("probe", true))
	}
	if a.FirstChunk > 0 {
		attrs = append(attrs, slog.Duration("first_chunk", a.FirstChunk.Round(time.Microsecond)))
	}
	if a.Usage.TotalTokens > 0 {
		attrs = append(attrs, slog.Int("tokens", a.Usage.TotalTokens))
	}
	if a.Err != nil {
		msg := a.Err.Error()
		if c := l.credentials(a.Scope, a.Source); len(c) > 0 {
			msg = string(provider.RedactCredentials([]byte(msg), c))
		}
		attrs = append(attrs, slog.String("err", msg))
	}
	l.log.LogAttrs(ctx, slog.LevelDebug, "pgw: attempt", attrs...)
}
