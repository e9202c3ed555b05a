package pgw_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// tracer is a ContextObserver whose attempts put a numbered header on their
// requests and keep the model the upstream says answered.
type tracer struct {
	observe.Funcs
	n      atomic.Int64
	mu     sync.Mutex
	models []string
}

type traceHooks struct {
	tr *tracer
	id string
}

func (h traceHooks) InjectHeaders(hd http.Header) { hd.Set("X-Test-Trace", h.id) }
func (h traceHooks) NoteResponseModel(m string) {
	h.tr.mu.Lock()
	defer h.tr.mu.Unlock()
	h.tr.models = append(h.tr.models, m)
}

func (tr *tracer) StartCall(ctx context.Context, _ observe.CallStart) context.Context { return ctx }
func (tr *tracer) StartAttempt(ctx context.Context, _ observe.AttemptStart) context.Context {
	return observe.WithAttemptHooks(ctx, traceHooks{tr: tr, id: "attempt-" + strconv.FormatInt(tr.n.Add(1), 10)})
}
func (tr *tracer) EndAttempt(context.Context, observe.AttemptRecord) {}
func (tr *tracer) EndWait(context.Context, observe.WaitEnd)          {}
func (tr *tracer) EndCall(context.Context, observe.CallResult)       {}

func (tr *tracer) Models() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.models...)
}

// The governed http.Client sends each attempt's trace context upstream and
// tells the observer the model the answer names, whole or streamed.
func TestHTTPClientCarriesTheAttemptTraceContextAndResponseModel(t *testing.T) {
	tr := &tracer{}
	primary, backup := testutil.NewUpstream(t), testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__PRIMARY__PRIORITY": "0",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__PRIORITY":  "1",
		"CHAT__BACKUP__MODEL":     "gpt-backup",
	}, pgw.WithObserver(tr))
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})

	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	readBody(t, resp)
	assert.Equal(t, "attempt-1", primary.LastRequest(testutil.Chat).Header.Get("X-Test-Trace"))
	assert.Equal(t, "attempt-2", backup.LastRequest(testutil.Chat).Header.Get("X-Test-Trace"))
	assert.Equal(t, []string{"gpt-backup"}, tr.Models())

	resp = post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	readBody(t, resp)
	assert.Equal(t, "attempt-3", primary.LastRequest(testutil.Chat).Header.Get("X-Test-Trace"))
	assert.Equal(t, []string{"gpt-backup", "sdk-model"}, tr.Models(), "a stream's model is noted once")
}
