package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/examples/sdk/internal/fake"
)

type rig struct {
	gw              *pgw.GatewayClient
	client          openai.Client
	primary, backup *fake.Upstream
}

// newRig builds a gateway on two fakes and an openai-go client through it,
// set up as the docs say (opts may add SDK options).
func newRig(t *testing.T, opts ...option.RequestOption) *rig {
	t.Helper()
	r := &rig{primary: fake.Start(), backup: fake.Start()}
	t.Cleanup(r.primary.Close)
	t.Cleanup(r.backup.Close)
	s, err := config.FromMap(fake.Env("openai", r.primary, r.backup))
	require.NoError(t, err)
	r.gw, err = pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.DiscardHandler)),
		pgw.WithBackoff(pgw.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.gw.Close()) })
	r.client = openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(r.gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
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
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.Equal(t, "sk-primary", reqs[0].Key)
}

func TestToolCall(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Tool: "get_weather", Arguments: `{"city":"Paris"}`})
	name, args, err := ToolCall(context.Background(), r.client)
	require.NoError(t, err)
	assert.Equal(t, "get_weather", name)
	assert.JSONEq(t, `{"city":"Paris"}`, args)
	tools, _ := r.primary.Requests()[0].Body["tools"].([]any)
	assert.Len(t, tools, 1, "the tools reach the upstream")
}

func TestJSONMode(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Text: `{"greeting":"hello"}`})
	got, err := AskJSON(context.Background(), r.client, "Greet me in JSON")
	require.NoError(t, err)
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(got), &v))
	assert.Equal(t, "hello", v["greeting"])
	assert.Equal(t, map[string]any{"type": "json_object"}, r.primary.Requests()[0].Body["response_format"])
}

func TestStreaming(t *testing.T) {
	r := newRig(t)
	got, err := Stream(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
}

func TestThrottleWithRetryAfterFailsOverAtOnce(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Status: 429, RetryAfter: "20"})
	start := time.Now()
	got, err := Ask(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
	assert.Less(t, time.Since(start), 5*time.Second, "no wait for the primary's Retry-After")
	assert.Len(t, r.primary.Requests(), 1)
	assert.Len(t, r.backup.Requests(), 1)
	// The primary is held off: the next call goes straight to the backup.
	_, err = Ask(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Len(t, r.primary.Requests(), 1)
	assert.Equal(t, pgw.StateClosed, r.state(t, "primary").State, "a throttle is no breaker failure")
}

func TestUnauthorizedOpensTheBreaker(t *testing.T) {
	r := newRig(t)
	r.primary.RequireKey("another-key")
	got, err := Ask(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
	assert.Equal(t, pgw.StateOpen, r.state(t, "primary").State)
}

func TestBadRequestIsNotRetried(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Status: 400, Code: "invalid_value"})
	_, err := Ask(context.Background(), r.client, "Say hello")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
	assert.Equal(t, "invalid_value", apiErr.Code, "the upstream's own answer reaches the SDK")
	assert.Len(t, r.primary.Requests(), 1)
	assert.Empty(t, r.backup.Requests(), "a bad request is not re-sent to the backup")
}

func TestMidStreamCutIsRecordedAsAFailure(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Text: "one two three", CutAfter: 1})
	_, err := Stream(context.Background(), r.client, "Say hello")
	require.Error(t, err, "the SDK sees the cut")
	assert.Empty(t, r.backup.Requests(), "a cut after content is not retried")
	assert.Equal(t, 1, r.state(t, "primary").ConsecutiveFailures)
}

func TestAllOpenVerdictIsNotRetriedByTheSDK(t *testing.T) {
	// The SDK keeps its default retries here: the verdict must stop them.
	r := newRig(t, option.WithMaxRetries(2))
	r.primary.RequireKey("x")
	r.backup.RequireKey("x")
	start := time.Now()
	_, err := Ask(context.Background(), r.client, "Say hello")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, pgw.SDKVerdictStatus, apiErr.StatusCode)
	assert.Equal(t, pgw.CodeCircuitOpen, apiErr.Code)
	assert.Len(t, r.primary.Requests(), 1, "one 401 per source, no SDK retry")
	assert.Len(t, r.backup.Requests(), 1)
	assert.Less(t, time.Since(start), 2*time.Second, "no SDK backoff")
	var open *pgw.CircuitOpenError
	require.ErrorAs(t, pgw.ErrorFrom(err), &open)
	assert.Positive(t, open.RetryAfter)
}

func TestCallStreamFailsOverBeforeTheFirstChunk(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Status: 503})
	got, err := StreamViaCallStream(context.Background(), r.gw, "Say hello")
	require.NoError(t, err)
	assert.Equal(t, fake.DefaultText, got)
	assert.Len(t, r.backup.Requests(), 1)
	assert.Equal(t, 1, r.state(t, "primary").ConsecutiveFailures)
}

func TestCallStreamMidStreamCutIsAFailure(t *testing.T) {
	r := newRig(t)
	r.primary.Enqueue(fake.Reply{Text: "one two three", CutAfter: 1})
	_, err := StreamViaCallStream(context.Background(), r.gw, "Say hello")
	require.Error(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
	assert.Empty(t, r.backup.Requests())
	assert.Equal(t, 1, r.state(t, "primary").ConsecutiveFailures)
}
