// Package wire is a scriptable stand-in for a provider's HTTP API in the SDK
// examples' tests: each request is answered by the next scripted handler
// (or the default one) and recorded — method, path, query, headers and
// body — so a test can tell which source pgw sent it to and what it carried.
// It also builds gateways on such servers and records what the gateway
// reports to its observer. It listens on loopback only.
package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// Request is what a Server recorded of one request.
type Request struct {
	// Method, Path and RawQuery are the request's method, URL path and
	// URL query, as sent.
	Method, Path, RawQuery string
	// Header is a copy of the request's headers.
	Header http.Header
	// Body is the request body, as sent.
	Body []byte
}

// Server is one scripted upstream. Safe for concurrent use.
type Server struct {
	// URL is the server's root URL.
	URL string

	srv   *httptest.Server
	def   http.HandlerFunc
	mu    sync.Mutex
	queue []http.HandlerFunc
	reqs  []Request
}

// Start starts a server whose unscripted requests def answers; it is
// closed when the test ends.
func Start(t testing.TB, def http.HandlerFunc) *Server {
	s := &Server{def: def}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// Next scripts the answers to the next requests, one handler each.
func (s *Server) Next(h ...http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, h...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count is the number of requests received so far.
func (s *Server) Count() int { return len(s.Requests()) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	h := s.def
	if len(s.queue) > 0 {
		h, s.queue = s.queue[0], s.queue[1:]
	}
	s.mu.Unlock()
	h(w, r)
}

// JSON answers status with body as application/json; header holds
// name, value pairs.
func JSON(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Events answers 200 with a server-sent event stream: each string is one
// event's lines ("data: {...}" or "event: x\ndata: {...}"), flushed one by
// one.
func Events(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, events)
	}
}

// Hang answers like Events, then keeps the stream open without another
// byte until the request is cancelled or release is closed (then it ends
// the body without its terminal event).
func Hang(release <-chan struct{}, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, events)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

func writeEvents(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, e := range events {
		fmt.Fprintf(w, "%s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

// Env is the configuration of one scope with two sources of provider on
// these base URLs: "primary" first, "backup" (priority 1) when primary
// cannot run. extra holds more key, value pairs ("PRIMARY__MAX_IN_FLIGHT",
// "1"), each prefixed with the scope.
func Env(scope, provider, primaryBase, backupBase string, extra ...string) map[string]string {
	env := map[string]string{
		"PGW_SCOPES":                  scope,
		scope + "__SOURCES":           "primary,backup",
		scope + "__FAILURE_THRESHOLD": "3",
		scope + "__PRIMARY__PROVIDER": provider,
		scope + "__PRIMARY__BASE_URL": primaryBase,
		scope + "__PRIMARY__API_KEY":  "sk-primary",
		scope + "__BACKUP__PROVIDER":  provider,
		scope + "__BACKUP__BASE_URL":  backupBase,
		scope + "__BACKUP__API_KEY":   "sk-backup",
		scope + "__BACKUP__PRIORITY":  "1",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[scope+"__"+extra[i]] = extra[i+1]
	}
	return env
}

// Recorder keeps what a gateway reports to its observer.
type Recorder struct {
	mu       sync.Mutex
	attempts []pgw.AttemptRecord
	calls    []pgw.CallResult
	states   []pgw.StateChange
}

// Observer is the observer to give the gateway.
func (r *Recorder) Observer() pgw.Observer {
	return pgw.ObserverFuncs{
		Attempt: func(a pgw.AttemptRecord) { r.mu.Lock(); r.attempts = append(r.attempts, a); r.mu.Unlock() },
		Call:    func(c pgw.CallResult) { r.mu.Lock(); r.calls = append(r.calls, c); r.mu.Unlock() },
		StateChange: func(s pgw.StateChange) {
			r.mu.Lock()
			r.states = append(r.states, s)
			r.mu.Unlock()
		},
	}
}

// Attempts returns the attempts reported so far.
func (r *Recorder) Attempts() []pgw.AttemptRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.AttemptRecord(nil), r.attempts...)
}

// Calls returns the call results reported so far.
func (r *Recorder) Calls() []pgw.CallResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.CallResult(nil), r.calls...)
}

// States returns the breaker state changes reported so far.
func (r *Recorder) States() []pgw.StateChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pgw.StateChange(nil), r.states...)
}

// Outcomes lists the attempts reported so far as "source:outcome".
func (r *Recorder) Outcomes() []string {
	var out []string
	for _, a := range r.Attempts() {
		out = append(out, a.Source+":"+a.Outcome)
	}
	return out
}

// Gateway builds a gateway on env that reports to rec, with a short
// backoff; it is closed when the test ends.
func Gateway(t testing.TB, env map[string]string, rec *Recorder, opts ...pgw.Option) *pgw.GatewayClient {
	t.Helper()
	s, err := config.FromMap(env)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]pgw.Option{
		pgw.WithLogger(slog.New(slog.DiscardHandler)),
		pgw.WithBackoff(pgw.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond}),
		pgw.WithObserver(rec.Observer()),
	}, opts...)
	gw, err := pgw.New(context.Background(), *s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gw.Close(); err != nil {
			t.Error(err)
		}
	})
	return gw
}

// State is the breaker state of a source.
func State(t testing.TB, gw *pgw.GatewayClient, scope, source string) pgw.Snapshot {
	t.Helper()
	s, err := gw.Snapshot(context.Background(), scope, source)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Lines joins SSE lines for one event.
func Lines(l ...string) string { return strings.Join(l, "\n") }
