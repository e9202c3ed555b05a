package pgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
)

// hookTracer is a user's ContextObserver that asks each attempt's transport
// for a header of its own and keeps the models the upstreams said answered.
type hookTracer struct {
	mu     sync.Mutex
	models []string
}

func (*hookTracer) ObserveAttempt(pgw.AttemptRecord)   {}
func (*hookTracer) ObserveStateChange(pgw.StateChange) {}
func (*hookTracer) StartCall(ctx context.Context, _ pgw.CallStart) context.Context {
	return ctx
}
func (h *hookTracer) StartAttempt(ctx context.Context, e pgw.AttemptStart) context.Context {
	return observe.WithAttemptHooks(ctx, attemptHooks{h: h, id: e.Scope + "/" + e.Source})
}
func (*hookTracer) EndAttempt(context.Context, pgw.AttemptRecord) {}
func (*hookTracer) EndWait(context.Context, pgw.WaitEnd)          {}
func (*hookTracer) EndCall(context.Context, pgw.CallResult)       {}

type attemptHooks struct {
	h  *hookTracer
	id string
}

func (a attemptHooks) InjectHeaders(h http.Header) { h.Set("X-User-Trace", a.id) }
func (a attemptHooks) NoteResponseModel(m string) {
	a.h.mu.Lock()
	a.h.models = append(a.h.models, m)
	a.h.mu.Unlock()
}

// headerServer answers every request with reply and keeps the X-User-Trace
// header of each.
func headerServer(t *testing.T, reply wireReply) (url string, seen func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("X-User-Trace"))
		mu.Unlock()
		w.Header().Set("Content-Type", reply.ctype)
		w.WriteHeader(reply.status)
		_, _ = io.WriteString(w, reply.body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// The ctx a user's ContextObserver hands back from StartAttempt reaches the
// transport: the OpenAI and Anthropic transports and HTTPClient add the
// headers of its AttemptHooks to the request and tell it the model that
// answered.
func TestAUserTracersAttemptHooksReachEveryTransport(t *testing.T) {
	oaURL, oaSeen := headerServer(t, sseReply(oaEvents("stop", `{"role":"assistant","content":"hi"}`)))
	antURL, antSeen := headerServer(t, sseReply(antEvents("end_turn", antText(0, "hi")...)))
	tr := &hookTracer{}
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "CHAT,RERANK",
		"CHAT__SOURCES":         "oa",
		"CHAT__OA__BASE_URL":    oaURL,
		"RERANK__SOURCES":       "ant",
		"RERANK__ANT__BASE_URL": antURL,
		"RERANK__ANT__PROVIDER": "anthropic",
		"RERANK__ANT__MODEL":    "claude-sonnet-4-5",
	}, pgw.WithObserver(tr))
	ctx := context.Background()
	_, err := gw.Chat(ctx, hello())
	require.NoError(t, err)
	readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true)))
	readBody(t, post(t, gw.HTTPClient("RERANK"), "messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))

	assert.Equal(t, []string{"CHAT/oa", "CHAT/oa"}, oaSeen())
	assert.Equal(t, []string{"RERANK/ant"}, antSeen())
	tr.mu.Lock()
	defer tr.mu.Unlock()
	assert.Contains(t, tr.models, "gpt-4o-mini")
	assert.Contains(t, tr.models, "claude-sonnet-4-5")
}
