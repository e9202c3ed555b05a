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
// each scope delivered, and the upstream Retry-After each source is under.
// Safe for concurrent use.
type scopeWatch struct {
	grace time.Duration
	// gap is the shortest pause between two deliveries of a scope that
	// deliveries keeps: the stall check asks only about longer ones.
	gap time.Duration

	mu         sync.Mutex
	deliveries map[string]*deliveries // scope → its deliveries
	hold       map[string]retryAfter  // scope/source → the latest Retry-After
	bad        func(format string, args ...any)
}

// deliveries is what a scope's deliveries left for the stall check: the
// last one, and every pause between two of them longer than the watch's gap
// (the time before the first counts as one, from 0).
type deliveries struct {
	last int64      // unix ns; 0: none yet
	gaps [][2]int64 // [from, to) in unix ns, in order
}

// maxGaps bounds the gaps a scope keeps: far more than a run has.
const maxGaps = 1 << 16

type retryAfter struct{ seen, until time.Time }

// newScopeWatch returns a watch that keeps the pauses between deliveries
// longer than gap.
func newScopeWatch(grace, gap time.Duration, bad func(string, ...any)) *scopeWatch {
	w := &scopeWatch{grace: grace, gap: gap, deliveries: map[string]*deliveries{}, hold: map[string]retryAfter{}, bad: bad}
	for _, s := range []string{ScopeChat, ScopeEmbed, ScopeTool} {
		w.deliveries[s] = &deliveries{}
	}
	return w
}

// deliver marks a success of scope at t. The gateway marks its own
// deliveries a moment later, so the worker's view is never ahead of it.
func (w *scopeWatch) deliver(scope string, t time.Time) {
	n := t.UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.deliveries[scope]
	if n > d.last {
		if n-d.last > int64(w.gap) && len(d.gaps) < maxGaps {
			d.gaps = append(d.gaps, [2]int64{d.last, n})
		}
		d.last = n
		return
	}
	// Marked after a later one (its goroutine ran late): it splits the
	// gap it falls in, if any.
	for i, g := range d.gaps {
		if g[0] < n && n < g[1] {
			var parts [][2]int64
			for _, p := range [][2]int64{{g[0], n}, {n, g[1]}} {
				if p[1]-p[0] > int64(w.gap) {
					parts = append(parts, p)
				}
			}
			d.gaps = append(d.gaps[:i], append(parts, d.gaps[i+1:]...)...)
			return
		}
	}
}

// keptDelivering reports whether a call of scope that ran from start to end
// and spent stall of it outside its attempts was allowed to go on by the
// scope's deliveries: the stall budget ends a call once its stall time and
// the time since its scope's last delivery both pass the window, so the
// call broke it if at some instant both had passed bound. The call's stall
// time at an earlier instant t is at least stall − (end − t).
func (w *scopeWatch) keptDelivering(scope string, start, end time.Time, stall, bound time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.deliveries[scope]
	e := end.UnixNano()
	broken := func(from, to int64) bool {
		at := min(to, e) // the latest instant of the call in the gap
		return at > start.UnixNano() && at-from > int64(bound) && stall-time.Duration(e-at) > bound
	}
	for _, g := range d.gaps {
		if broken(g[0], g[1]) {
			return false
		}
	}
	return !broken(d.last, e)
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
