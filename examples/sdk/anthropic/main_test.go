package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/examples/sdk/internal/fake"
)

type rig struct {
	gw              *pgw.GatewayClient
	client          anthropic.Client
	primary, backup *fake.Upstream
}

func newRig(t *testing.T, opts ...option.RequestOption) *rig {
	t.Helper()
	r := &rig{primary: fake.Start(), backup: fake.Start()}
	t.Cleanup(r.primary.Close)
	t.Cleanup(r.backup.Close)
	s, err := config.FromMap(fake.Env("anthropic", r.primary, r.backup))
	require.NoError(t, err)
	r.gw, err = pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.DiscardHandler)),
		pgw.WithBackoff(pgw.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.gw.Close()) })
	r.client = anthropic.NewClient(append([]option.RequestOption{
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(r.gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
		option.WithAPIKey("set-by-pgw"),
	}, opts...)...)
	return r
}

func (r *rig) state(t *testing.T, source string) pgw.Snapshot {
	t.Helper()
	s, err := r.gw.Snapshot(context.Background(), "CHAT", source)
	require.NoError(t, err)
	return s
}

func TestAnswerComesFromTheSourceWithItsKey(t *testing.T) {
	r := newRig(t)
	got, err := Ask(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
	reqs := r.primary.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/messages", reqs[0].Path)
	assert.Equal(t, "sk-primary", reqs[0].Key, "x-api-key carries the source's key")
}

func TestToolCall(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Tool: "get_weather", Arguments: `{"city":"Paris"}`})
	name, input, err := ToolCall(context.Background(), r.client)
	require.NoError(t, err)
	assert.Equal(t, "get_weather", name)
	assert.JSONEq(t, `{"city":"Paris"}`, input)
}

func TestStreaming(t *testing.T) {
	r := newRig(t)
	got, err := Stream(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
}

func TestOverloadedBeforeContentFailsOver(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Status: 529, Code: "overloaded_error"})
	got, err := Stream(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
	assert.Len(t, r.backup.Requests(), 1)
}

func TestThrottleWithRetryAfterFailsOverAtOnce(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Status: 429, RetryAfter: "20", Code: "rate_limit_error"})
	start := time.Now()
	got, err := Ask(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Len(t, r.backup.Requests(), 1)
	_, err = Ask(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Len(t, r.primary.Requests(), 1, "the primary is held off for its Retry-After")
}

func TestUnauthorizedOpensTheBreaker(t *testing.T) {
	r := newRig(t)
	r.primary.RequireKey("another-key")
	_, err := Ask(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, r.state(t, "primary").State)
}

func TestBadRequestIsNotRetried(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Status: 400, Code: "invalid_request_error"})
	_, err := Ask(context.Background(), r.client, "Say hello")
	var apiErr *anthropic.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
	assert.Empty(t, r.backup.Requests())
}

func TestMidStreamCutIsRecordedAsAFailure(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Text: "one two three", CutAfter: 1})
	_, err := Stream(context.Background(), r.client, "Say hello")
	require.Error(t, err)
	assert.Empty(t, r.backup.Requests())
	assert.Equal(t, 1, r.state(t, "primary").ConsecutiveFailures)
}

func TestAllOpenVerdictIsNotRetriedByTheSDK(t *testing.T) {
	r := newRig(t, option.WithMaxRetries(2))
	r.primary.RequireKey("x")
	r.backup.RequireKey("x")
	_, err := Ask(context.Background(), r.client, "Say hello")
	var apiErr *anthropic.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, pgw.SDKVerdictStatus, apiErr.StatusCode)
	assert.Len(t, r.primary.Requests(), 1)
	assert.Len(t, r.backup.Requests(), 1)
	var open *pgw.CircuitOpenError
	require.ErrorAs(t, pgw.ErrorFrom(err), &open)
}
