package faultsuite

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw"
)

// meter is one call's account of the time it spent inside its transport
// attempts. The transports find it in the call's ctx (pgw passes the
// caller's ctx values down to every attempt).
type meter struct {
	mu        sync.Mutex
	attempted time.Duration // closed attempts
	open      time.Time     // start of the running attempt; zero when none
	attempts  int
	cut       bool // the last stream failed after its first chunk
}

type meterKey struct{}

func withMeter(ctx context.Context, m *meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

func meterOf(ctx context.Context) *meter {
	m, _ := ctx.Value(meterKey{}).(*meter)
	return m
}

func (m *meter) begin(now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts++
	m.open = now
	m.cut = false
}

func (m *meter) end(now time.Time, cut bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.open.IsZero() {
		m.attempted += now.Sub(m.open)
		m.open = time.Time{}
	}
	m.cut = cut
}

// inAttempts is the time spent in attempts until now, the running one
// included.
func (m *meter) inAttempts(now time.Time) (time.Duration, int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.attempted
	if !m.open.IsZero() {
		d += now.Sub(m.open)
	}
	return d, m.attempts, m.cut
}

// scopeWatch is what the worker's transports learn while calls run: when
// each scope last delivered, and the upstream Retry-After each source is
// under. Safe for concurrent use.
type scopeWatch struct {
	delivered map[string]*atomic.Int64 // scope → unix ns of the last delivery
	grace     time.Duration

	mu   sync.Mutex
	hold map[string]retryAfter // scope/source → the latest Retry-After
	bad  func(format string, args ...any)
}

type retryAfter struct{ seen, until time.Time }

func newScopeWatch(grace time.Duration, bad func(string, ...any)) *scopeWatch {
	w := &scopeWatch{delivered: map[string]*atomic.Int64{}, grace: grace, hold: map[string]retryAfter{}, bad: bad}
	for _, s := range []string{ScopeChat, ScopeEmbed, ScopeTool} {
		w.delivered[s] = new(atomic.Int64)
	}
	return w
}

// deliver marks a success of scope at t. The gateway marks its own
// deliveries a moment later, so the worker's view is never ahead of it.
func (w *scopeWatch) deliver(scope string, t time.Time) {
	d := w.delivered[scope]
	n := t.UnixNano()
	for {
		cur := d.Load()
		if cur >= n || d.CompareAndSwap(cur, n) {
			return
		}
	}
}

func (w *scopeWatch) lastDelivery(scope string) time.Time {
	return time.Unix(0, w.delivered[scope].Load())
}

// starting checks that an attempt on source starting now does not break a
// Retry-After the process received for it.
func (w *scopeWatch) starting(scope, source string, now time.Time) {
	if w.grace <= 0 {
		return
	}
	w.mu.Lock()
	ra, ok := w.hold[scope+"/"+source]
	w.mu.Unlock()
	if ok && now.After(ra.seen.Add(w.grace)) && now.Before(ra.until.Add(-w.grace)) {
		w.bad("%s/%s: attempt started %v after a 429 whose Retry-After runs %v more",
			scope, source, now.Sub(ra.seen).Round(time.Millisecond), ra.until.Sub(now).Round(time.Millisecond))
	}
}

// failed notes an attempt's error: a 429 with Retry-After holds the source.
func (w *scopeWatch) failed(scope, source string, err error, now time.Time) {
	var he *pgw.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests || he.RetryAfter <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	k := scope + "/" + source
	until := now.Add(he.RetryAfter)
	if cur, ok := w.hold[k]; ok && cur.until.After(until) {
		until = cur.until
	}
	w.hold[k] = retryAfter{seen: now, until: until}
}

// meteredChat times every streamed attempt from the request until the
// stream ends, and marks a delivery at the first chunk (where the chat loop
// marks its own).
type meteredChat struct {
	tr    pgw.ChatTransport
	watch *scopeWatch
}

func (c meteredChat) ChatStream(ctx context.Context, src pgw.Source, req pgw.ChatRequest) (pgw.ChatStream, error) {
	m := meterOf(ctx)
	start := time.Now()
	c.watch.starting(ScopeChat, src.Name, start)
	m.begin(start)
	st, err := c.tr.ChatStream(ctx, src, req)
	if err != nil {
		now := time.Now()
		m.end(now, false)
		c.watch.failed(ScopeChat, src.Name, err, now)
		return nil, err
	}
	return &meteredStream{st: st, m: m, watch: c.watch, src: src.Name}, nil
}

type meteredStream struct {
	st     pgw.ChatStream
	m      *meter
	watch  *scopeWatch
	src    string
	chunks int
	ended  atomic.Bool
}

func (s *meteredStream) Recv() (pgw.ChatChunk, error) {
	ch, err := s.st.Recv()
	now := time.Now()
	switch {
	case err == nil:
		if s.chunks == 0 {
			s.watch.deliver(ScopeChat, now)
		}
		s.chunks++
	case errors.Is(err, io.EOF):
		s.finish(now, false)
	default:
		s.finish(now, s.chunks > 0)
		s.watch.failed(ScopeChat, s.src, err, now)
	}
	return ch, err
}

func (s *meteredStream) Close() error {
	err := s.st.Close()
	s.finish(time.Now(), false)
	return err
}

func (s *meteredStream) finish(now time.Time, cut bool) {
	if s.ended.CompareAndSwap(false, true) {
		s.m.end(now, cut)
	}
}

// meteredEmbed times every embedding attempt.
type meteredEmbed struct {
	tr    pgw.EmbedTransport
	watch *scopeWatch
	scope string
}

func (e meteredEmbed) Embed(ctx context.Context, src pgw.Source, req pgw.EmbedRequest) (pgw.EmbedResponse, error) {
	m := meterOf(ctx)
	start := time.Now()
	e.watch.starting(e.scope, src.Name, start)
	m.begin(start)
	resp, err := e.tr.Embed(ctx, src, req)
	now := time.Now()
	m.end(now, false)
	if err != nil {
		e.watch.failed(e.scope, src.Name, err, now)
	} else {
		e.watch.deliver(e.scope, now)
	}
	return resp, err
}
