package pgw

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
)

// The observer types, re-exported from package observe. Hand an
// Observer to the gateway with WithObserver; it also receives the optional
// events whose interfaces it implements: attempt starts, gate rejections,
// waits and call results (observe.AttemptStartObserver, RejectionObserver,
// WaitObserver, CallObserver). Wrap an observer that does more than update
// counters in observe.Async, so that it never slows a call.
type (
	// Observer receives attempt records and breaker state changes, called
	// synchronously on the calls' goroutines, outside every lock, possibly
	// concurrently: it must be safe for concurrent use and quick.
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
	ResultSuccess          = observe.ResultSuccess
	ResultCircuitOpen      = observe.ResultCircuitOpen
	ResultQuotaExhausted   = observe.ResultQuotaExhausted
	ResultStalled          = observe.ResultStalled
	ResultUnavailable      = observe.ResultUnavailable
	ResultCallerError      = observe.ResultCallerError
	ResultCanceled         = observe.ResultCanceled
	ResultDeadlineExceeded = observe.ResultDeadlineExceeded
	ResultAbandoned        = observe.ResultAbandoned
	ResultClosed           = observe.ResultClosed
	ResultError            = observe.ResultError
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
	creds map[string]map[string][]string
}

// sourceCredentials returns provider.Credentials of every source of s with
// any, by scope and source name.
func sourceCredentials(s Settings) map[string]map[string][]string {
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
	return out
}

// Enabled reports whether the logger takes Debug lines now: when it does
// not, and there is no other observer, a call builds no reports at all.
func (l attemptLog) Enabled() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }

func (l attemptLog) ObserveAttempt(a AttemptRecord) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs,
		slog.String("scope", a.Scope),
		slog.String("source", a.Source),
		slog.Int("attempt", a.Attempt),
		slog.String("outcome", a.Outcome),
		slog.Duration("latency", a.Latency.Round(time.Microsecond)))
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
		if c := l.creds[a.Scope][a.Source]; len(c) > 0 {
			msg = string(provider.RedactCredentials([]byte(msg), c))
		}
		attrs = append(attrs, slog.String("err", msg))
	}
	l.log.LogAttrs(ctx, slog.LevelDebug, "pgw: attempt", attrs...)
}
