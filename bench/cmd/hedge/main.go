// Command hedge measures first-chunk hedging and latency-aware balancing on
// loopback: two fake OpenAI-compatible sources on 127.0.0.1 whose time to
// first chunk follows a reproducible random heavy tail (95 % about 50 ms, 5 % 2 s), and
// one gateway per configuration:
//
//	none      no hedging, weighted choice
//	fixed     HEDGE_AFTER_S (default 0.1)
//	adaptive  HEDGE_AFTER=p90
//	latency   BALANCE=latency
//	adaptive+latency
//
// For each it opens -calls streamed chat completions (-concurrency at a
// time) after a warm-up, and prints p50/p95/p99 time to first chunk and the
// extra upstream attempts per call. Run from bench/:
//
//	go run ./cmd/hedge                   (about 40 s on 2 CPUs)
//	go run ./cmd/hedge -calls 2000       (a steadier tail, about 2 minutes)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/observe"
)

func main() {
	calls := flag.Int("calls", 600, "measured calls per configuration")
	warm := flag.Int("warmup", 60, "unmeasured calls per configuration before")
	conc := flag.Int("concurrency", 16, "calls in flight")
	stream := flag.Uint64("rand", 18, "start of the upstreams' reproducible random delays")
	fast := flag.Duration("fast", 50*time.Millisecond, "typical time to first chunk (±20 %)")
	slow := flag.Duration("slow", 2*time.Second, "time to first chunk of the tail")
	tail := flag.Float64("tail", 0.05, "share of slow first chunks")
	fixed := flag.Float64("fixed", 0.1, "HEDGE_AFTER_S of the fixed configuration")
	flag.Parse()

	type cfg struct {
		name string
		keys map[string]string
	}
	cfgs := []cfg{
		{"(a) none", nil},
		{"(b) fixed " + fmt.Sprint(*fixed) + " s", map[string]string{"CHAT__HEDGE_AFTER_S": fmt.Sprint(*fixed)}},
		{"(c) adaptive p90", map[string]string{"CHAT__HEDGE_AFTER": "p90"}},
		{"(d) latency balance", map[string]string{"CHAT__BALANCE": "latency"}},
		{"(c)+(d)", map[string]string{"CHAT__HEDGE_AFTER": "p90", "CHAT__BALANCE": "latency"}},
	}
	fmt.Printf("%s, %s; %d calls/config (+%d warm-up), %d in flight; first chunk: %.0f %% ≈ %v (±20 %%), %.0f %% %v; rand %d\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtimeInfo(), *calls, *warm, *conc,
		100*(1-*tail), *fast, 100**tail, *slow, *stream)
	fmt.Printf("| configuration | p50 | p95 | p99 | p99/p50 | extra attempts | hedges fired / won |\n")
	fmt.Printf("|---|---|---|---|---|---|---|\n")
	for i, c := range cfgs {
		up := newUpstreams(*stream+uint64(i), *fast, *slow, *tail)
		r, err := measure(up, c.keys, *calls, *warm, *conc)
		up.close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "hedge:", c.name+":", err)
			os.Exit(1)
		}
		fmt.Printf("| %s | %v | %v | %v | %.1f | %.1f %% | %d / %d |\n", c.name,
			ms(r.p50), ms(r.p95), ms(r.p99), float64(r.p99)/float64(r.p50), 100*r.extra, r.fired, r.won)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func runtimeInfo() string {
	return fmt.Sprintf("%s, %d CPUs", runtime.Version(), numCPU())
}

// upstreams are two fake sources sharing one reproducible random delay stream.
type upstreams struct {
	mu         sync.Mutex
	rng        *rand.Rand
	fast, slow time.Duration
	tail       float64
	srv        []*httptest.Server
}

func newUpstreams(start uint64, fast, slow time.Duration, tail float64) *upstreams {
	u := &upstreams{rng: rand.New(rand.NewPCG(start, start*0x9e3779b97f4a7c15+1)), fast: fast, slow: slow, tail: tail}
	for range 2 {
		u.srv = append(u.srv, httptest.NewServer(http.HandlerFunc(u.serve)))
	}
	return u
}

func (u *upstreams) close() {
	for _, s := range u.srv {
		s.Close()
	}
}

func (u *upstreams) delay() time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.rng.Float64() < u.tail {
		return u.slow
	}
	return time.Duration(float64(u.fast) * (0.8 + 0.4*u.rng.Float64()))
}

func (u *upstreams) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	d := u.delay()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return // the gateway gave up on this attempt (a lost hedge)
	}
	_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"hello"}}]}`+"\n\n")
	_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`+"\n\n")
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

type result struct {
	p50, p95, p99 time.Duration
	extra         float64
	fired, won    int64
}

func measure(up *upstreams, keys map[string]string, calls, warm, conc int) (result, error) {
	env := map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "a,b",
		"CHAT__A__BASE_URL":  up.srv[0].URL + "/v1",
		"CHAT__B__BASE_URL":  up.srv[1].URL + "/v1",
		"CHAT__A__TIMEOUT_S": "30",
		"CHAT__B__TIMEOUT_S": "30",
	}
	for k, v := range keys {
		env[k] = v
	}
	s, err := config.FromMap(env)
	if err != nil {
		return result{}, err
	}
	var attempts, fired, won atomic.Int64
	counting := atomic.Bool{}
	obs := observe.Funcs{
		AttemptStart: func(observe.AttemptStart) {
			if counting.Load() {
				attempts.Add(1)
			}
		},
		Hedge: func(h observe.Hedge) {
			if !counting.Load() {
				return
			}
			switch h.Event {
			case observe.HedgeFired:
				fired.Add(1)
			case observe.HedgeWon:
				won.Add(1)
			}
		},
	}
	gw, err := pgw.New(context.Background(), *s, pgw.WithObserver(obs),
		pgw.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return result{}, err
	}
	defer gw.Close()
	req := pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "hi"}}}
	run := func(n int) ([]time.Duration, error) {
		out := make([]time.Duration, n)
		var next atomic.Int64
		var firstErr error
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					start := time.Now()
					st, err := gw.ChatStream(context.Background(), req)
					out[i] = time.Since(start)
					if err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
					for {
						if _, err := st.Recv(); err != nil {
							break
						}
					}
					_ = st.Close()
				}
			}()
		}
		wg.Wait()
		return out, firstErr
	}
	if _, err := run(warm); err != nil {
		return result{}, err
	}
	counting.Store(true)
	ttfc, err := run(calls)
	if err != nil {
		return result{}, err
	}
	slices.Sort(ttfc)
	q := func(p float64) time.Duration { return ttfc[min(int(p*float64(len(ttfc))), len(ttfc)-1)] }
	return result{
		p50: q(0.50), p95: q(0.95), p99: q(0.99),
		extra: float64(attempts.Load()-int64(calls)) / float64(calls),
		fired: fired.Load(), won: won.Load(),
	}, nil
}

func numCPU() int { return runtime.NumCPU() }
