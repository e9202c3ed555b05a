package pgw_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
)

// This file pins the names the advertised budget, the standalone breaker's
// peer options, and hedging and latency-aware choice are used by. Like
// pinned_api_test.go it is checked by the compiler.

// Rate-limit headers and the advertised budget.
var (
	_ func(provider.Dialect, http.Header, time.Time) provider.RateLimits = provider.ParseRateLimits
	_ func([]byte, time.Time) (provider.GeminiHold, bool)                = provider.ParseGeminiError
	_ func(config.Provider, string) provider.Dialect                     = provider.DialectOf
	_                                                                    = []provider.Dialect{provider.DialectOpenAI, provider.DialectAzure, provider.DialectAnthropic, provider.DialectGroq, provider.DialectGemini}
	_                                                                    = provider.RateLimits{Requests: provider.Window{Limit: 1, Remaining: 1, Reset: time.Second, PerDay: false}, Tokens: provider.Window{}, RetryAfter: 0, HasRetryAfter: false, Malformed: nil, Clamped: nil}
	_                                                                    = []time.Duration{provider.MaxReset, provider.MinReset, provider.MaxRetryAfter}

	_ gate.BudgetGate
	_ func(*testing.T, contracttest.BudgetFactory) = contracttest.RunBudget
	_                                              = gate.Advertised{Requests: gate.AdvertisedWindow{Limit: 1, Remaining: 1, Reset: time.Second}, Tokens: gate.UnknownWindow}
	_                                              = pgw.Snapshot{Configured: gate.Limits{}, Advertised: &gate.Advertised{}}
	_                                              = config.Source{LimitsFromHeaders: true}
)

// The standalone breaker's gate rules and peer options.
var (
	_ = gate.Policy{ConsecutiveFailures: gate.Disabled, WindowFailures: 3, HalfOpenCalls: 2}
	_ = []gate.Force{gate.ForceNone, gate.ForceOpen, gate.ForceClosed, gate.ForceHalfOpen}
	_ = breaker.Config{
		IsSuccessful: func(error) bool { return true }, HandleErrors: []error{io.EOF},
		ReadyToTrip: func(breaker.Counts) bool { return false }, FailureThreshold: 1, CountWindow: 1, Interval: time.Second,
	}
	_ = breaker.Counts{Requests: 1, TotalSuccesses: 1, TotalFailures: 1, TotalExclusions: 1, ConsecutiveSuccesses: 1, ConsecutiveFailures: 1}
	_ = breaker.StateChange{Counts: breaker.Counts{}, Context: context.Background()}

	_ func(*breaker.Breaker) error                              = (*breaker.Breaker).Open
	_ func(*breaker.Breaker) error                              = (*breaker.Breaker).Close
	_ func(*breaker.Breaker) error                              = (*breaker.Breaker).HalfOpen
	_ func(*breaker.Breaker, context.Context, gate.Force) error = (*breaker.Breaker).Force
	_ func(*breaker.Breaker) gate.State                         = (*breaker.Breaker).State
	_ func(*breaker.Breaker) breaker.Counts                     = (*breaker.Breaker).Counts
	_ func(*breaker.Breaker)                                    = (*breaker.Breaker).ResetCounts
	_ func(*breaker.Breaker, func(breaker.StateChange))         = (*breaker.Breaker).OnOpen
	_ func(*breaker.Breaker, func(breaker.StateChange))         = (*breaker.Breaker).OnClose
	_ func(*breaker.Breaker, func(breaker.StateChange))         = (*breaker.Breaker).OnHalfOpen
)

func pinnedDoResult(ctx context.Context, cb *breaker.Breaker) (int, error) {
	return breaker.DoResult(ctx, cb, func(context.Context) (int, error) { return 0, nil },
		func(v int, err error) bool { return err != nil || v < 0 })
}

// Hedging and latency-aware choice.
var (
	_ = config.ScopeSettings{Balance: config.BalanceLatency, HedgeAfter: time.Second, HedgeQuantile: 0.9, HedgeBudget: config.DefaultHedgeBudget, HedgeMax: config.DefaultHedgeMax}
	_ = []config.Balance{config.BalanceWeighted, config.BalanceLatency, config.DefaultBalance}

	_ func(*pgw.GatewayClient, string) ([]pgw.LatencyStats, error) = (*pgw.GatewayClient).Latency
	_ func(*pgw.GatewayClient, io.Writer) error                    = (*pgw.GatewayClient).WriteLatencyStatus
	_                                                              = pgw.LatencyStats{Source: "", EWMA: 0, InFlight: 0, Observed: 0, P50: 0, P90: 0}

	_                       = observe.Hedge{Scope: "", Source: "", Primary: "", Event: observe.HedgeFired, At: time.Time{}}
	_                       = []string{observe.HedgeFired, observe.HedgeWon, observe.HedgeWasted, observe.HedgeSkippedBudget, observe.HedgeSkippedNoSource, observe.OutcomeHedgeLost}
	_ observe.HedgeObserver = observe.Funcs{}
	_                       = []string{pgw.OutcomeHedgeLost, pgw.OutcomeAbandoned}
)

// An observer written against the root package alone: every event type of
// every optional interface, the hedging events and operations, by their
// root names.
type rootObserver struct{}

func (rootObserver) ObserveAttempt(pgw.AttemptRecord)                               {}
func (rootObserver) ObserveStateChange(pgw.StateChange)                             {}
func (rootObserver) ObserveAttemptStart(pgw.AttemptStart)                           {}
func (rootObserver) ObserveRejection(pgw.Rejection)                                 {}
func (rootObserver) ObserveWaitStart(pgw.WaitStart)                                 {}
func (rootObserver) ObserveWaitEnd(pgw.WaitEnd)                                     {}
func (rootObserver) ObserveCall(pgw.CallResult)                                     {}
func (rootObserver) ObserveHedge(pgw.Hedge)                                         {}
func (rootObserver) ObserveHedgeContext(context.Context, pgw.Hedge)                 {}
func (rootObserver) ObserveAdvertised(pgw.Advertised)                               {}
func (rootObserver) Enabled() bool                                                  { return true }
func (rootObserver) EndAttempt(context.Context, pgw.AttemptRecord)                  {}
func (rootObserver) EndWait(context.Context, pgw.WaitEnd)                           {}
func (rootObserver) EndCall(context.Context, pgw.CallResult)                        {}
func (rootObserver) StartCall(ctx context.Context, _ pgw.CallStart) context.Context { return ctx }
func (rootObserver) StartAttempt(ctx context.Context, _ pgw.AttemptStart) context.Context {
	return ctx
}

var (
	_ pgw.Observer             = rootObserver{}
	_ pgw.AttemptStartObserver = rootObserver{}
	_ pgw.RejectionObserver    = rootObserver{}
	_ pgw.WaitObserver         = rootObserver{}
	_ pgw.CallObserver         = rootObserver{}
	_ pgw.HedgeObserver        = rootObserver{}
	_ pgw.HedgeContextObserver = rootObserver{}
	_ pgw.AdvertisedObserver   = rootObserver{}
	_ pgw.EnabledObserver      = rootObserver{}
	_ pgw.ContextObserver      = rootObserver{}

	_ = pgw.ObserverFuncs{Hedge: func(pgw.Hedge) {}}
	_ = pgw.Hedge{Scope: "", Source: "", Primary: "", Event: pgw.HedgeFired, At: time.Time{}}
	_ = []string{pgw.HedgeFired, pgw.HedgeWon, pgw.HedgeWasted, pgw.HedgeSkippedBudget, pgw.HedgeSkippedNoSource}
	_ = pgw.CallStart{Scope: "", Operation: pgw.OperationChat, Model: "", At: time.Time{}}
	_ = []string{pgw.OperationChat, pgw.OperationEmbeddings, pgw.OperationOCR}
	_ = pgw.Advertised{Scope: "", Source: "", Requests: pgw.AdvertisedWindow{Limit: -1, Remaining: -1, Reset: 0}, Tokens: pgw.AdvertisedWindow{}, At: time.Time{}}
)

func TestPinnedV2NamesCompile(t *testing.T) {
	_ = pinnedDoResult
}
