package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/fallback"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/sony/gobreaker/v2"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// The end-to-end overhead of a governed call: one POST of a
// small JSON body to a local httptest upstream that answers a tiny JSON, made
//
//   - raw: straight through net/http, nothing around it;
//   - raw-deadline: the same under context.WithTimeout (the source's
//     TIMEOUT_S), the one thing every governed call adds that is not a
//     library's own code: net/http's work for a ctx that can end (its
//     Done channel in each select, its cancel registration) and the
//     timer. It is the floor under any library's cost around the call;
//   - pgw: as the attempt of pgw.Call on a GatewayClient (memory backend, one
//     source with an RPM quota and MAX_IN_FLIGHT): admission, breaker,
//     quota acquire/settle/release, the retry loop, the attempt's timeout;
//   - gobreaker: inside gobreaker v2's CircuitBreaker.Execute;
//   - failsafe: inside failsafe-go's executor with a circuit breaker;
//   - failsafe-composed: inside failsafe-go composed of the policies pgw
//     applies — a retry policy, a circuit breaker, a rate limiter (the
//     source's RPM), a bulkhead (its MAX_IN_FLIGHT) and a timeout per
//     attempt (its TIMEOUT_S) under which the request runs, with a fallback
//     to a second executor of the same kind (pgw's fail-over to another
//     source).
//
// The request is the same function in every leaf, each leaf with its own
// upstream and connection pool, so the differences are what each library
// adds around it. On a loopback HTTP call of some 50–100 µs, that difference
// is within the run-to-run noise of a shared machine; so the serial leaves
// also time the raw call inside each call and report the rest,
// overhead-ns/call: the library's own cost, call by call. cmd/ratios prints
// pgw ÷ each peer (ns/op) and, for these groups, each leaf's cost over raw.
// GovernedCallRedis does the same on the Redis backend (one script to admit
// on the caller's path, one to conclude from the writer, on a local
// redis-server) against raw.

// upstreamBody is what the fake upstream answers to every request.
const upstreamBody = `{"object":"ok","usage":{"total_tokens":3}}`

var requestBody = []byte(`{"model":"bench","input":"hello"}`)

// rawUpstream is the upstream and the one call every leaf makes to it.
type rawUpstream struct {
	url    string
	client *http.Client
}

func newRawUpstream(b *testing.B) *rawUpstream {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, upstreamBody)
	}))
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return &rawUpstream{url: srv.URL + "/v1/embeddings", client: &http.Client{Transport: tr}}
}

// call is the raw call: POST, read the whole answer, check the status.
func (u *rawUpstream) call(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(requestBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &pgw.HTTPError{StatusCode: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
	}
	return nil
}

// inside accumulates the time a serial benchmark spends inside the raw
// call, so that each leaf can report the time it spent around it: the
// library's own overhead, measured call by call and free of the upstream's
// noise. Parallel benchmarks do not use it.
type inside struct{ d time.Duration }

func (in *inside) call(u *rawUpstream) func(context.Context) error {
	return func(ctx context.Context) error {
		t0 := time.Now()
		err := u.call(ctx)
		in.d += time.Since(t0)
		return err
	}
}

// overheadContenders are the leaves of a GovernedCall group: each returns
// one call through its library around raw.
var overheadContenders = []struct {
	name string
	make func(b *testing.B, raw func(context.Context) error, u *rawUpstream) func(context.Context) error
}{
	{"raw", func(_ *testing.B, raw func(context.Context) error, _ *rawUpstream) func(context.Context) error {
		return raw
	}},
	{"raw-deadline", func(_ *testing.B, raw func(context.Context) error, _ *rawUpstream) func(context.Context) error {
		return func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return raw(ctx)
		}
	}},
	{"pgw", func(b *testing.B, raw func(context.Context) error, u *rawUpstream) func(context.Context) error {
		return governed(b, raw, u, config.BackendMemory, nil)
	}},
	{"gobreaker", func(_ *testing.B, raw func(context.Context) error, _ *rawUpstream) func(context.Context) error {
		cb := gobreaker.NewCircuitBreaker[any](gobreaker.Settings{Name: "upstream"})
		return func(ctx context.Context) error {
			_, err := cb.Execute(func() (any, error) { return nil, raw(ctx) })
			return err
		}
	}},
	{"failsafe", func(_ *testing.B, raw func(context.Context) error, _ *rawUpstream) func(context.Context) error {
		exec := failsafe.With[any](circuitbreaker.NewBuilder[any]().Build())
		return func(ctx context.Context) error {
			return exec.Run(func() error { return raw(ctx) })
		}
	}},
	{"failsafe-composed", func(_ *testing.B, raw func(context.Context) error, _ *rawUpstream) func(context.Context) error {
		// Innermost, a timeout per attempt (the source's TIMEOUT_S, which
		// pgw puts on every attempt's ctx), and the request runs under the
		// execution's ctx so that the timeout bounds it, as pgw's does.
		policies := func() []failsafe.Policy[any] {
			return []failsafe.Policy[any]{
				retrypolicy.NewBuilder[any]().WithMaxRetries(2).Build(),
				circuitbreaker.NewBuilder[any]().Build(),
				ratelimiter.NewBurstyBuilder[any](10_000_000, time.Minute).Build(),
				bulkhead.NewBuilder[any](1024).Build(),
				timeout.New[any](10 * time.Second),
			}
		}
		attempt := func(exec failsafe.Execution[any]) error { return raw(exec.Context()) }
		second := failsafe.With[any](policies()...)
		fb := fallback.NewWithFunc[any](func(exec failsafe.Execution[any]) (any, error) {
			return nil, second.WithContext(exec.Context()).RunWithExecution(attempt)
		})
		first := failsafe.With[any](append([]failsafe.Policy[any]{fb}, policies()...)...)
		return func(ctx context.Context) error {
			return first.WithContext(ctx).RunWithExecution(attempt)
		}
	}},
}

// governed builds a GatewayClient whose scope BENCH has one source on u, and
// returns one pgw.Call making raw as its attempt.
func governed(b *testing.B, raw func(context.Context) error, u *rawUpstream, backend config.Backend, opts []pgw.Option) func(context.Context) error {
	b.Helper()
	s := pgw.Settings{
		BreakerBackend: backend,
		Scopes: []pgw.ScopeSettings{{
			Name: "BENCH",
			Sources: []pgw.Source{{
				Name: "up", BaseURL: u.url, Timeout: 10 * time.Second,
				RPM: 10_000_000, MaxInFlight: 1024,
			}},
		}},
	}
	gw, err := pgw.New(context.Background(), s, append([]pgw.Option{pgw.WithLogger(discardLogger)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gw.Close() })
	attempt := func(ctx context.Context, _ pgw.Source) (struct{}, pgw.Usage, error) {
		return struct{}{}, pgw.Usage{}, raw(ctx)
	}
	return func(ctx context.Context) error {
		_, err := pgw.Call(ctx, gw, "BENCH", attempt)
		return err
	}
}

// serialLoop runs call b.N times and, except for the raw leaf, reports the
// time spent around the raw call per call (overhead-ns/call).
func serialLoop(b *testing.B, name string, call func(context.Context) error, in *inside) {
	ctx := context.Background()
	if err := call(ctx); err != nil { // warm the pool
		b.Fatalf("%s: %v", name, err)
	}
	in.d = 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if name != "raw" {
		b.ReportMetric(float64(b.Elapsed()-in.d)/float64(b.N), "overhead-ns/call")
	}
}

// BenchmarkGovernedCall: serial (one goroutine) and parallel (GOMAXPROCS
// goroutines) calls to the local upstream through each library.
func BenchmarkGovernedCall(b *testing.B) {
	for _, c := range overheadContenders {
		b.Run("serial/"+c.name, func(b *testing.B) {
			u := newRawUpstream(b)
			in := &inside{}
			serialLoop(b, c.name, c.make(b, in.call(u), u), in)
		})
	}
	for _, c := range overheadContenders {
		b.Run("parallel/"+c.name, func(b *testing.B) {
			u := newRawUpstream(b)
			call := c.make(b, u.call, u)
			ctx := context.Background()
			if err := call(ctx); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkNoUpstream: the GovernedCall leaves around an attempt with no
// upstream, serially — one that does nothing (warm: what each library costs
// when its code and data stay in the CPU's caches), and one that writes a
// byte in every cache line of 1 MiB (evicted: what it costs once the attempt
// has pushed them out, as an HTTP round trip does). The attempt times itself
// as in GovernedCall, so overhead-ns/call is the library's own cost.
func BenchmarkNoUpstream(b *testing.B) {
	for _, evict := range []struct {
		name  string
		bytes int
	}{{"warm", 0}, {"evicted-1MiB", 1 << 20}} {
		for _, c := range overheadContenders {
			b.Run(evict.name+"/"+c.name, func(b *testing.B) {
				u := newRawUpstream(b) // the source's BASE_URL; never called
				buf := make([]byte, evict.bytes)
				in := &inside{}
				attempt := func(context.Context) error {
					t0 := time.Now()
					touchLines(buf)
					in.d += time.Since(t0)
					return nil
				}
				serialLoop(b, c.name, c.make(b, attempt, u), in)
			})
		}
	}
}

// touchLines writes one byte in each 64-byte line of buf.
//
//go:noinline
func touchLines(buf []byte) {
	for i := 0; i < len(buf); i += 64 {
		buf[i]++
	}
}

// BenchmarkGovernedCallRedis: serial calls governed on the Redis backend
// (breaker, quota and advertised budget in a local redis-server: one round
// trip on the caller's path, the admission's script, and one for the
// outcome from the gateway's writer) against the raw call.
func BenchmarkGovernedCallRedis(b *testing.B) {
	for _, name := range []string{"raw", "pgw"} {
		b.Run("serial/"+name, func(b *testing.B) {
			u := newRawUpstream(b)
			in := &inside{}
			call := in.call(u)
			if name == "pgw" {
				client := startRedis(b)
				call = governed(b, call, u, config.BackendRedis, []pgw.Option{pgw.WithRedisClient(client)})
			}
			serialLoop(b, name, call, in)
		})
	}
}
