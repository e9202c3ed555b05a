package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/examples/sdk/internal/fake"
)

type rig struct {
	gw              *pgw.GatewayClient
	client          *goopenai.Client
	primary, backup *fake.Upstream
}

func newRig(t *testing.T) *rig {
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
	cfg := goopenai.DefaultConfig("")
	cfg.BaseURL, cfg.HTTPClient = pgw.SDKBaseURL, r.gw.HTTPClient("CHAT")
	r.client = goopenai.NewClientWithConfig(cfg)
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
	_, err := Ask(context.Background(), r.client, "Say hello")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Len(t, r.backup.Requests(), 1)
	_, err = Ask(context.Background(), r.client, "again")
	require.NoError(t, err)
	assert.Len(t, r.primary.Requests(), 1, "go-openai's errors carry no headers, but the governed client saw the Retry-After")
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
	r.primary.Enqueue(fake.Reply{Status: 400, Code: "invalid_value"})
	_, err := Ask(context.Background(), r.client, "Say hello")
	var apiErr *goopenai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.HTTPStatusCode)
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

func TestAllOpenVerdictCarriesThePgwCode(t *testing.T) {
	r := newRig(t)
	r.primary.RequireKey("x")
	r.backup.RequireKey("x")
	_, err := Ask(context.Background(), r.client, "Say hello")
	var apiErr *goopenai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, pgw.SDKVerdictStatus, apiErr.HTTPStatusCode)
	assert.Equal(t, pgw.CodeCircuitOpen, apiErr.Code)
	assert.Len(t, r.primary.Requests(), 1)
	assert.Len(t, r.backup.Requests(), 1)
}
