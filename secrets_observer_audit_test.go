package pgw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// auditSecObsMarker is planted in a source's API key and in its BASE_URL's
// query; no observer event may carry it.
const auditSecObsMarker = "OBSsecret4Zq"

// auditSecObsRecorder keeps every event of every observer interface, as
// strings rendered with the verbs and encodings a user's observer would use.
type auditSecObsRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *auditSecObsRecorder) add(kind string, e any) {
	outs := []string{fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)}
	if b, err := json.Marshal(e); err == nil {
		outs = append(outs, string(b))
	}
	var sb strings.Builder
	slog.New(slog.NewJSONHandler(&sb, nil)).Info(kind, "e", e)
	outs = append(outs, sb.String())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range outs {
		r.events = append(r.events, kind+": "+o)
	}
}

func (r *auditSecObsRecorder) ObserveAttempt(e pgw.AttemptRecord)     { r.add("attempt", e) }
func (r *auditSecObsRecorder) ObserveStateChange(e pgw.StateChange)   { r.add("state", e) }
func (r *auditSecObsRecorder) ObserveAttemptStart(e pgw.AttemptStart) { r.add("start", e) }
func (r *auditSecObsRecorder) ObserveRejection(e pgw.Rejection)       { r.add("rejection", e) }
func (r *auditSecObsRecorder) ObserveWaitStart(e pgw.WaitStart)       { r.add("waitstart", e) }
func (r *auditSecObsRecorder) ObserveWaitEnd(e pgw.WaitEnd)           { r.add("waitend", e) }
func (r *auditSecObsRecorder) ObserveCall(e pgw.CallResult)           { r.add("call", e) }
func (r *auditSecObsRecorder) ObserveHedge(e pgw.Hedge)               { r.add("hedge", e) }
func (r *auditSecObsRecorder) ObserveAdvertised(e pgw.Advertised)     { r.add("advertised", e) }
func (r *auditSecObsRecorder) StartCall(ctx context.Context, e pgw.CallStart) context.Context {
	r.add("callstart", e)
	return ctx
}
func (r *auditSecObsRecorder) StartAttempt(ctx context.Context, e pgw.AttemptStart) context.Context {
	r.add("ctxattempt", e)
	return ctx
}
func (r *auditSecObsRecorder) EndAttempt(_ context.Context, e pgw.AttemptRecord) {
	r.add("endattempt", e)
}
func (r *auditSecObsRecorder) EndWait(_ context.Context, e pgw.WaitEnd)    { r.add("endwait", e) }
func (r *auditSecObsRecorder) EndCall(_ context.Context, e pgw.CallResult) { r.add("endcall", e) }

// TestNoSecretInAnyObserverEvent: a source whose API key and BASE_URL query
// hold a secret, and whose upstream echoes both back in its error bodies and
// headers (a 401, a 500, a 429 with Retry-After and rate-limit headers),
// shows the secret in no observer event of Chat, ChatStream or Embed — the
// records, starts, rejections, waits, call results, advertised limits and
// the context observer's events, under %v, %+v, %#v, JSON and slog — nor in
// the gateway's logs or the errors returned.
func TestNoSecretInAnyObserverEvent(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		echo := fmt.Sprintf("got %s for %s?%s", r.Header.Get("Authorization"), r.URL.Path, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", echo)
		w.Header().Set("x-ratelimit-limit-requests", "100")
		w.Header().Set("x-ratelimit-remaining-requests", "1")
		w.Header().Set("x-ratelimit-reset-requests", "1s")
		switch i % 3 {
		case 0:
			w.WriteHeader(http.StatusUnauthorized)
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(http.StatusTooManyRequests)
		}
		_, _ = fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, echo)
	}))
	t.Cleanup(srv.Close)

	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":                        "CHAT,EMBEDDING",
		"CHAT__SOURCES":                     "a,b",
		"CHAT__QUOTA_FULL":                  "fail_fast",
		"CHAT__FAILURE_THRESHOLD":           "1",
		"CHAT__A__BASE_URL":                 srv.URL + "/v1?api-version=2024-10-21&sig=" + auditSecObsMarker,
		"CHAT__A__API_KEY":                  "sk-" + auditSecObsMarker,
		"CHAT__A__LIMITS_FROM_HEADERS":      "true",
		"CHAT__B__BASE_URL":                 srv.URL + "/v1?key=" + auditSecObsMarker,
		"CHAT__B__API_KEY":                  auditSecObsMarker,
		"EMBEDDING__SOURCES":                "e",
		"EMBEDDING__QUOTA_FULL":             "fail_fast",
		"EMBEDDING__E__BASE_URL":            srv.URL + "/v1?code=" + auditSecObsMarker,
		"EMBEDDING__E__API_KEY":             auditSecObsMarker,
		"EMBEDDING__E__LIMITS_FROM_HEADERS": "true",
	})
	require.NoError(t, err)

	rec := &auditSecObsRecorder{}
	logs := &syncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(l), pgw.WithObserver(rec), fastBackoff)
	require.NoError(t, err)

	var errsSeen []error
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := gw.Chat(ctx, hello())
		errsSeen = append(errsSeen, err)
		st, err := gw.ChatStream(ctx, hello())
		if err == nil {
			_, err = st.Recv()
			_ = st.Close()
		}
		errsSeen = append(errsSeen, err)
		_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x", "y"}})
		errsSeen = append(errsSeen, err)
		cancel()
	}
	require.NoError(t, gw.Close())

	mu.Lock()
	require.Positive(t, n, "the upstream was reached")
	mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	kinds := map[string]bool{}
	for _, e := range rec.events {
		kind, _, _ := strings.Cut(e, ":")
		kinds[kind] = true
		require.NotContains(t, e, auditSecObsMarker, "an observer event")
	}
	for _, k := range []string{"attempt", "start", "call", "callstart", "ctxattempt", "endattempt", "endcall"} {
		require.True(t, kinds[k], "the observer saw %s events (saw %v)", k, kinds)
	}
	for _, err := range errsSeen {
		require.Error(t, err)
		requireNoMarker(t, "a call's error", err)
	}
	require.NotContains(t, logs.String(), auditSecObsMarker, "logs")
}
