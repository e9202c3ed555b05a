package pgw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// cancelFace is one public face of a governed call, run to its end: a
// stream is read to io.EOF (nil) or to the error that cut it.
type cancelFace struct {
	name, scope string
	run         func(ctx context.Context, gw *pgw.GatewayClient) error
}

// upstreamCall is one attempt of the Call and CallStream faces: a chat
// completion on the source's BASE_URL, an upstream failure returned as a
// *pgw.HTTPError.
func upstreamCall(ctx context.Context, src pgw.Source) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, src.BaseURL+"/chat/completions", strings.NewReader(chatBody(false)))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 300 {
		return &pgw.HTTPError{StatusCode: resp.StatusCode, Message: resp.Status}
	}
	return nil
}

// recvToEOF calls recv until it fails; io.EOF is no error.
func recvToEOF[T any](recv func() (T, error)) error {
	for {
		if _, err := recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// cancelFaces are every face a caller reaches a governed call through.
func cancelFaces(t *testing.T) []cancelFace {
	img := tinyPNG(t)
	return []cancelFace{
		{"Call", "CHAT", func(ctx context.Context, gw *pgw.GatewayClient) error {
			_, err := pgw.Call(ctx, gw, "CHAT", func(ctx context.Context, src pgw.Source) (int, pgw.Usage, error) {
				return 1, pgw.Usage{}, upstreamCall(ctx, src)
			})
			return err
		}},
		{"CallStream", "CHAT", func(ctx context.Context, gw *pgw.GatewayClient) error {
			st, err := pgw.CallStream(ctx, gw, "CHAT", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
				if err := upstreamCall(ctx, src); err != nil {
					return nil, err
				}
				return &auditNilStream{items: []string{"x"}}, nil
			})
			if err != nil {
				return err
			}
			defer st.Close()
			return recvToEOF(st.Recv)
		}},
		{"Chat", "CHAT", func(ctx context.Context, gw *pgw.GatewayClient) error {
			_, err := gw.Chat(ctx, hello())
			return err
		}},
		{"ChatStream", "CHAT", func(ctx context.Context, gw *pgw.GatewayClient) error {
			st, err := gw.ChatStream(ctx, hello())
			if err != nil {
				return err
			}
			defer st.Close()
			return recvToEOF(st.Recv)
		}},
		{"Embed", "EMBEDDING", func(ctx context.Context, gw *pgw.GatewayClient) error {
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a"}})
			return err
		}},
		{"OCR", "OCR", func(ctx context.Context, gw *pgw.GatewayClient) error {
			_, err := gw.OCR(ctx, pgw.OCRRequest{Image: img})
			return err
		}},
		{"HTTPClient", "CHAT", func(ctx context.Context, gw *pgw.GatewayClient) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(true)))
			if err != nil {
				return err
			}
			resp, err := gw.HTTPClient("CHAT").Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode >= 300 {
				return fmt.Errorf("status %s", resp.Status)
			}
			return nil
		}},
	}
}

// facesEnv is the CHAT, EMBEDDING and OCR scopes, one source "a" each on
// up, each with the extra keys (without the scope's prefix), on the
// memory backend or on the Redis server at redisAddr.
func facesEnv(t *testing.T, redisAddr string, up *testutil.Upstream, extra map[string]string) map[string]string {
	env := map[string]string{"PGW_SCOPES": "CHAT,EMBEDDING,OCR"}
	if redisAddr != "" {
		env["PGW_BREAKER_BACKEND"] = "redis"
		env["PGW_REDIS_URL"] = "redis://" + redisAddr + "/0"
		env["PGW_REDIS_PREFIX"] = "pgw-test-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	}
	for _, sc := range []string{"CHAT", "EMBEDDING", "OCR"} {
		env[sc+"__SOURCES"] = "a"
		env[sc+"__A__BASE_URL"] = up.URL
		for k, v := range extra {
			env[sc+"__"+k] = v
		}
	}
	return env
}

// faceBackends are the memory backend ("") and a real redis-server.
func faceBackends(t *testing.T) map[string]string {
	return map[string]string{"memory": "", "redis": testutil.StartRedis(t).Addr}
}

// endsWithin runs f and returns its error, failing the test when f has not
// returned within d: a face that ignores its caller's end would hold the
// test for a minute-long backoff or a wait without end.
func endsWithin(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the call did not return within %v of its caller's end", d)
		return nil
	}
}

// count returns how many of lines start with prefix.
func count(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// callEnds are the call results log saw, "call <result>" each.
func callEnds(log *eventLog) []string {
	var out []string
	for _, l := range log.Lines() {
		if strings.HasPrefix(l, "call ") {
			out = append(out, strings.Join(strings.Fields(l)[:2], " "))
		}
	}
	return out
}

// goroutinesSettle fails the test unless the goroutine count comes back to
// about base once everything the test started has ended.
func goroutinesSettle(t *testing.T, base int) {
	t.Helper()
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	require.Eventually(t, func() bool { return settle() <= base+2 }, 10*time.Second, 10*time.Millisecond,
		"goroutines: %d at the start, %d now", base, runtime.NumGoroutine())
}

// Every face — Call, CallStream, Chat, ChatStream, Embed, OCR and the
// governed http.Client — whose caller cancels, or whose gateway is closed,
// while it backs off between failed attempts (a one-minute backoff) returns
// at once with context.Canceled or ErrClosed (errors.Is, through the
// http.Client's *url.Error too), and the observer sees exactly one end of
// the call, canceled or closed. On the memory backend and on Redis; no
// goroutine is left behind.
func TestAuditEveryFaceEndsAtOnceWhenItsCallerGivesUpDuringABackoff(t *testing.T) {
	base := runtime.NumGoroutine()
	for backend, addr := range faceBackends(t) {
		for _, how := range []string{"cancel", "Close"} {
			for _, f := range cancelFaces(t) {
				t.Run(backend+"/"+how+"/"+f.name, func(t *testing.T) {
					up := testutil.NewUpstream(t)
					for _, ep := range []testutil.Endpoint{testutil.Chat, testutil.Embeddings, testutil.OCR} {
						up.SetDefault(ep, testutil.Reply{Status: http.StatusServiceUnavailable})
					}
					log := &eventLog{}
					gw, _ := newGateway(t, facesEnv(t, addr, up, map[string]string{"MAX_ATTEMPTS": "10", "FAILURE_THRESHOLD": "100"}),
						pgw.WithObserver(log), pgw.WithBackoff(pgw.Backoff{Base: time.Minute, Max: time.Minute}))
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					go func() {
						// The first attempt's record: its backoff follows.
						for count(log.Lines(), "attempt ") == 0 {
							time.Sleep(time.Millisecond)
						}
						if how == "cancel" {
							cancel()
						} else {
							_ = gw.Close()
						}
					}()
					err := endsWithin(t, 10*time.Second, func() error { return f.run(ctx, gw) })
					want, result := error(context.Canceled), pgw.ResultCanceled
					if how == "Close" {
						want, result = pgw.ErrClosed, pgw.ResultClosed
					}
					require.ErrorIs(t, err, want)
					if how == "cancel" {
						assert.NotErrorIs(t, err, pgw.ErrClosed)
					}
					var gue *pgw.GatewayUnavailableError
					assert.NotErrorAs(t, err, &gue, "the caller's end, not the budget's")
					assert.Equal(t, []string{"call " + result}, callEnds(log), "one end of the call")
				})
			}
		}
	}
	goroutinesSettle(t, base)
}

// Every face whose caller cancels, whose deadline passes, or whose gateway
// is closed while it waits for admission with no certain end — the one
// in-flight slot taken (QUOTA_FULL=wait, MAX_IN_FLIGHT=1), or the probe of
// an open breaker in flight (CIRCUIT_OPEN=wait) — returns at once with
// context.Canceled, context.DeadlineExceeded or ErrClosed, and holds
// nothing: once the holder is done, the next call of the face is admitted
// on the slot or probe the waiter did not take. The poll interval is 30 s,
// so each nap of the wait is long: it is the nap that must end with the
// caller. The observer sees exactly one end per call. On the memory backend and on Redis; no goroutine is
// left behind.
func TestAuditEveryFaceEndsAtOnceWhenItsCallerGivesUpWaitingForAdmission(t *testing.T) {
	base := runtime.NumGoroutine()
	waits := map[string]map[string]string{
		"in-flight slot": {"A__MAX_IN_FLIGHT": "1", "STALL_WINDOW_S": "600", "POLL_INTERVAL_S": "30"},
		"probe in flight": {"CIRCUIT_OPEN": "wait", "FAILURE_THRESHOLD": "1", "COOLDOWN_S": "0.05",
			"PROBE_TTL_S": "600", "STALL_WINDOW_S": "600", "POLL_INTERVAL_S": "30", "MAX_ATTEMPTS": "1"},
	}
	for backend, addr := range faceBackends(t) {
		for wait, extra := range waits {
			for _, how := range []string{"cancel", "deadline", "Close"} {
				for _, f := range cancelFaces(t) {
					t.Run(backend+"/"+wait+"/"+how+"/"+f.name, func(t *testing.T) {
						up := testutil.NewUpstream(t)
						log := &eventLog{}
						gw, _ := newGateway(t, facesEnv(t, addr, up, extra), pgw.WithObserver(log))
						calls := 0
						if wait == "probe in flight" {
							_, err := pgw.Call(context.Background(), gw, f.scope, func(context.Context, pgw.Source) (int, pgw.Usage, error) {
								return 0, pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusServiceUnavailable}
							})
							var gue *pgw.GatewayUnavailableError
							require.ErrorAs(t, err, &gue, "one failure opens the breaker")
							calls++
							require.Eventually(t, func() bool {
								snap, err := gw.Snapshot(context.Background(), f.scope, "a")
								return err == nil && snap.State == pgw.StateOpen && snap.RetryAfter == 0
							}, 10*time.Second, 5*time.Millisecond, "the cooldown passes: the holder probes without a wait")
						}
						// The holder takes the slot, or (once the cooldown
						// passed) the probe, and keeps it until released.
						held, release, holderDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
						go func() {
							_, err := pgw.Call(context.Background(), gw, f.scope, func(ctx context.Context, _ pgw.Source) (int, pgw.Usage, error) {
								close(held)
								select {
								case <-release:
								case <-ctx.Done():
								}
								return 1, pgw.Usage{}, nil
							})
							holderDone <- err
						}()
						calls++
						<-held
						waitsBefore := count(log.Lines(), "wait_start")

						ctx, cancel := context.WithCancel(context.Background())
						if how == "deadline" {
							ctx, cancel = context.WithTimeout(context.Background(), 150*time.Millisecond)
						}
						defer cancel()
						if how != "deadline" {
							go func() {
								for count(log.Lines(), "wait_start") == waitsBefore {
									time.Sleep(time.Millisecond)
								}
								if how == "cancel" {
									cancel()
								} else {
									_ = gw.Close()
								}
							}()
						}
						err := endsWithin(t, 10*time.Second, func() error { return f.run(ctx, gw) })
						calls++
						want := map[string]error{"cancel": context.Canceled, "deadline": context.DeadlineExceeded, "Close": pgw.ErrClosed}[how]
						require.ErrorIs(t, err, want)
						if how != "Close" {
							assert.NotErrorIs(t, err, pgw.ErrClosed)
						}
						assert.Equal(t, 0, up.TotalRequests(), "the waiter sent nothing")

						close(release)
						require.NoError(t, <-holderDone)
						if how != "Close" {
							require.NoError(t, endsWithin(t, 10*time.Second, func() error { return f.run(context.Background(), gw) }),
								"the next call is admitted: the waiter held nothing")
							calls++
						}
						ends := callEnds(log)
						assert.Len(t, ends, calls, "one end per call: %v", ends)
						wantResult := map[string]string{"cancel": pgw.ResultCanceled, "deadline": pgw.ResultCanceled, "Close": pgw.ResultClosed}[how]
						assert.Equal(t, 1, count(ends, "call "+wantResult), "the waiter's end: %v", ends)
					})
				}
			}
		}
	}
	goroutinesSettle(t, base)
}
