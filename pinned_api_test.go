package pgw_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/contracttest"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
	"github.com/pgw-go/pgw/retry"
)

// This file pins the names callers' code is written against: the facade,
// the chat model, the error types and their fields, the gate ports and
// constructors, the standalone breaker and the configuration. It is checked
// by the compiler; the one test below only keeps the references alive.

// The facade.
var (
	_ func(context.Context, ...pgw.Option) (*pgw.GatewayClient, error)                       = pgw.NewFromEnv
	_ func(context.Context, pgw.Settings, ...pgw.Option) (*pgw.GatewayClient, error)         = pgw.New
	_ func(*pgw.GatewayClient, context.Context, pgw.ChatRequest) (pgw.ChatResponse, error)   = (*pgw.GatewayClient).Chat
	_ func(*pgw.GatewayClient, context.Context, pgw.ChatRequest) (*pgw.Stream, error)        = (*pgw.GatewayClient).ChatStream
	_ func(*pgw.GatewayClient, context.Context, pgw.EmbedRequest) (pgw.EmbedResponse, error) = (*pgw.GatewayClient).Embed
	_ func(*pgw.GatewayClient, context.Context, pgw.OCRRequest) (pgw.OCRResponse, error)     = (*pgw.GatewayClient).OCR
	_ func(*pgw.GatewayClient) error                                                         = (*pgw.GatewayClient).Close
	_ func(*pgw.GatewayClient, string) *http.Client                                          = (*pgw.GatewayClient).HTTPClient
	_ func(*pgw.Stream) (pgw.ChatChunk, error)                                               = (*pgw.Stream).Recv
	_ func(*pgw.Stream) error                                                                = (*pgw.Stream).Close

	_ func(pgw.ChatTransport) pgw.Option       = pgw.WithChatTransport
	_ func(pgw.EmbedTransport) pgw.Option      = pgw.WithEmbedTransport
	_ func(pgw.OCRTransport) pgw.Option        = pgw.WithOCRTransport
	_ func(pgw.Observer) pgw.Option            = pgw.WithObserver
	_ func(goredis.UniversalClient) pgw.Option = pgw.WithRedisClient

	_ func(error) error = pgw.ErrorFrom
	_ error             = pgw.ErrClosed
)

// SDKBaseURL is an untyped string constant.
const _ string = pgw.SDKBaseURL

func pinnedCall(ctx context.Context, gw *pgw.GatewayClient) (int, error) {
	return pgw.Call(ctx, gw, "MYSCOPE", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
		return 0, pgw.Usage{}, nil
	})
}

func pinnedCallStream(ctx context.Context, gw *pgw.GatewayClient) (*pgw.ItemStream[string], error) {
	return pgw.CallStream(ctx, gw, "MYSCOPE", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return nil, nil
	}, pgw.FirstItem(func(string) bool { return true }))
}

// The requests, answers and the chat model, in OpenAI's wire names.
var (
	_ = pgw.EmbedRequest{Inputs: []string{"x"}}
	_ = pgw.OCRRequest{Image: []byte{}}
	_ = pgw.Message{Role: pgw.RoleUser, Content: "", Parts: []pgw.ContentPart{pgw.TextPart("")},
		ToolCalls:  []pgw.ToolCall{{ID: "", Type: "function", Function: pgw.FunctionCall{Name: "", Arguments: ""}}},
		ToolCallID: "", Name: ""}
	_ = pgw.ChatRequest{Messages: []pgw.Message{}, Tools: []pgw.Tool{pgw.FunctionTool("f", "", nil)},
		ToolChoice: pgw.ToolChoiceRequired, ResponseFormat: &pgw.ResponseFormat{Type: pgw.FormatJSONSchema},
		Stop: []string{}, Seed: new(int), TopP: new(float64), ParallelToolCalls: new(bool), User: "",
		Extra: map[string]any{}}
	_ = pgw.ChatChunk{Delta: "", ToolCalls: []pgw.ToolCallDelta{}, FinishReason: "", Usage: &pgw.Usage{}}
	_ = pgw.ChatResponse{Content: "", ToolCalls: []pgw.ToolCall{}, FinishReason: "", Refusal: "",
		Usage: pgw.Usage{}, Source: ""}
	_ = pgw.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}
	_ = pgw.Source{Name: "", BaseURL: "", APIKey: config.NewSecret(""), Model: "", Timeout: time.Second,
		RPM: 0, TPM: 0, MaxInFlight: 0, Weight: 1, Priority: 0, BatchSize: 0}
	_ = pgw.ToolChoiceFunction{Name: "f"}
)

// The errors, their fields and codes.
var (
	_ = &pgw.CircuitOpenError{Scope: "", Sources: []string{}, RetryAfter: time.Second, Last: nil}
	_ = &pgw.AllSourcesExhausted{Scope: "", Reason: pgw.ReasonQuotaExhausted, Reasons: map[string]string{},
		RetryAfter: 0, Last: nil}
	_ = &pgw.GatewayUnavailableError{Scope: "", Attempts: 1, Last: nil}
	_ = &pgw.ConfigError{Problems: []pgw.ConfigProblem{{Key: "", Value: "", Legal: "", Unset: false}}}
	_ = &pgw.HTTPError{StatusCode: 429, RetryAfter: time.Second, Message: ""}
	_ = pgw.ReasonStalled

	_ interface{ Code() string } = (*pgw.CircuitOpenError)(nil)
	_ interface{ Code() string } = (*pgw.AllSourcesExhausted)(nil)
	_ interface{ Code() string } = (*pgw.GatewayUnavailableError)(nil)
	_ interface{ Code() string } = (*pgw.ConfigError)(nil)
	_ interface{ Code() string } = (*pgw.HTTPError)(nil)
	_ interface{ Code() string } = (*breaker.OpenError)(nil)

	_ interface{ Unwrap() error } = (*pgw.CircuitOpenError)(nil)
	_ interface{ Unwrap() error } = (*pgw.AllSourcesExhausted)(nil)
	_ interface{ Unwrap() error } = (*pgw.GatewayUnavailableError)(nil)

	_ = &breaker.OpenError{Name: "", State: gate.Open, RetryAfter: 0}
	_ = breaker.ErrOpen
)

// The gate ports and constructors.
var (
	_ gate.ProviderGate = (*memory.Breaker)(nil)
	_ gate.ProviderGate = (*redis.Breaker)(nil)
	_ gate.ProviderGate = gate.Noop{}
	_ gate.QuotaGate    = (*memory.Quota)(nil)
	_ gate.QuotaGate    = (*redis.Quota)(nil)
	_ gate.Clock        = interface{ Now() time.Time }(nil)

	_ func(gate.Policy, ...memory.Option) (*memory.Breaker, error)                                = memory.NewBreaker
	_ func(gate.Clock) memory.Option                                                              = memory.WithClock
	_ func(goredis.UniversalClient, string, gate.Policy, ...redis.Option) (*redis.Breaker, error) = redis.NewBreaker
	_ func(string) redis.Option                                                                   = redis.WithPrefix

	_ = gate.Decision{Allowed: true, State: gate.Closed, RetryAfter: 0, Probe: false, Token: 1}
	_ = gate.Update{Applied: true, State: gate.HalfOpen, RetryAfter: 0}
	_ = []gate.Outcome{gate.Success, gate.Failure, gate.Fatal, gate.Released}
	_ = gate.Policy{ConsecutiveFailures: 5, Window: 0, WindowMinCalls: 0, WindowFailureRate: 0,
		Cooldown: time.Minute, MaxCooldown: 10 * time.Minute, CooldownMultiplier: 2, ProbeTTL: 0,
		SuccessThreshold: 1, HalfOpenProbes: 1}

	_ func(*testing.T, contracttest.BreakerFactory) = contracttest.RunBreaker
	_ func(*testing.T, contracttest.QuotaFactory)   = contracttest.RunQuota

	_ *admission.SourceAdmission
	_ func(error) retry.Class = retry.Classify
	_ *retry.StallClock
)

// The standalone breaker.
var (
	_ func(string, breaker.Config) (*breaker.Breaker, error)                          = breaker.New
	_ func(*breaker.Breaker, context.Context, func(context.Context) error) error      = (*breaker.Breaker).Execute
	_ func(*breaker.Breaker, context.Context) (*breaker.Token, error)                 = (*breaker.Breaker).Allow
	_ func(*breaker.Token, error)                                                     = (*breaker.Token).Done
	_ func(*breaker.Breaker, func(context.Context) error) func(context.Context) error = breaker.Wrap
	_ func(*breaker.Registry, string, breaker.Config) (*breaker.Breaker, error)       = (*breaker.Registry).GetOrCreate
	_ func(*breaker.Breaker) breaker.Metrics                                          = (*breaker.Breaker).Metrics
	_ func(*breaker.Breaker, func(breaker.StateChange))                               = (*breaker.Breaker).OnStateChange
	_                                                                                 = breaker.Config{IsExcluded: func(error) bool { return false }, ExcludedErrors: []error{errors.ErrUnsupported}}
)

func pinnedDo(ctx context.Context, cb *breaker.Breaker) (int, error) {
	return breaker.Do(ctx, cb, func(context.Context) (int, error) { return 0, nil })
}

// Configuration and observers.
var (
	_ func() (*config.Settings, error)                  = config.FromEnv
	_ func(map[string]string) (*config.Settings, error) = config.FromMap
	_                                                   = config.Settings{Scopes: []config.ScopeSettings{{Name: "CHAT"}}}
	_ *pgw.Settings                                     = (*config.Settings)(nil)
	_                                                   = []config.Provider{config.ProviderOpenAI, config.ProviderAzure, config.ProviderAnthropic}
	_ observe.Observer                                  = (*prom.Collector)(nil)
	_ func(...prom.Option) *prom.Collector              = prom.New
)

func TestPinnedNamesCompile(t *testing.T) {
	_ = pinnedCall
	_ = pinnedCallStream
	_ = pinnedDo
}

// The stable codes of the public errors.
func TestPinnedErrorCodes(t *testing.T) {
	for want, err := range map[string]interface{ Code() string }{
		"PGW-CB-OPEN":     &pgw.CircuitOpenError{},
		"PGW-EXHAUSTED":   &pgw.AllSourcesExhausted{},
		"PGW-UNAVAILABLE": &pgw.GatewayUnavailableError{},
		"PGW-CONFIG":      &pgw.ConfigError{},
	} {
		if got := err.Code(); got != want {
			t.Errorf("%T.Code() = %q, want %q", err, got, want)
		}
	}
	if got := (&breaker.OpenError{}).Code(); got != "PGW-CB-OPEN" {
		t.Errorf("breaker.OpenError.Code() = %q", got)
	}
	if !errors.Is(&breaker.OpenError{}, breaker.ErrOpen) {
		t.Error("a *breaker.OpenError does not match breaker.ErrOpen")
	}
}
