package advertisedsuite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The measured set-up: processes × goroutines callers, an upstream that
// allows budget requests per window and answers 429 beyond it.
const (
	processes  = 3
	goroutines = 8
	budget     = 20
	windowLen  = 3 * time.Second
	windows    = 2
	latency    = 10 * time.Millisecond // the upstream's answer time: calls are in flight a while
)

// Environment of a child process.
const (
	envChild  = "PGW_ADV_TEST_CHILD"
	envRedis  = "PGW_ADV_TEST_REDIS"
	envURL    = "PGW_ADV_TEST_URL"
	envPrefix = "PGW_ADV_TEST_PREFIX"
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	goredis.SetLogger(quietLogger{})
	if os.Getenv(envChild) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// childReport is what a child prints when its load ends.
type childReport struct {
	OK     int            `json:"ok"`
	GaveUp int            `json:"gave_up"`
	Errors map[string]int `json:"errors"`
}

// runChild builds a gateway on the shared Redis, says ready, reads the load's
// end (unix ns) from stdin, runs goroutines callers until then and reports.
func runChild() int {
	s, err := config.FromMap(map[string]string{
		"PGW_BREAKER_BACKEND":          "redis",
		"PGW_QUOTA_BACKEND":            "redis",
		"PGW_REDIS_URL":                "redis://" + os.Getenv(envRedis),
		"PGW_REDIS_PREFIX":             os.Getenv(envPrefix),
		"EMBEDDING__SOURCES":           "up",
		"EMBEDDING__UP__BASE_URL":      os.Getenv(envURL),
		"EMBEDDING__UP__MODEL":         "m",
		"EMBEDDING__MAX_ATTEMPTS":      "1000",
		"EMBEDDING__POLL_INTERVAL_S":   "0.02",
		"EMBEDDING__FAILURE_THRESHOLD": "1000",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	gw, err := pgw.New(ctx, *s, pgw.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer gw.Close()
	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(map[string]bool{"ready": true})
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 2
	}
	end, err := strconv.ParseInt(in.Text(), 10, 64)
	if err != nil {
		return 2
	}
	until := time.Unix(0, end)
	lctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	var (
		mu  sync.Mutex
		rep = childReport{Errors: map[string]int{}}
		wg  sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			for lctx.Err() == nil {
				_, err := gw.Embed(lctx, pgw.EmbedRequest{Inputs: []string{"x"}})
				var ase *pgw.AllSourcesExhausted
				mu.Lock()
				switch {
				case err == nil:
					rep.OK++
				case errors.As(err, &ase) && ase.Reason == "quota_exhausted" && ase.RetryAfter > 0 &&
					!time.Now().Add(ase.RetryAfter).Before(until):
					// The budget resets after the load's deadline: the call
					// ended at once instead of sleeping into it. A caller
					// would come back after RetryAfter.
					rep.GaveUp++
				case lctx.Err() == nil:
					rep.Errors[err.Error()]++
				}
				mu.Unlock()
				if ase != nil && ase.RetryAfter > 0 {
					t := time.NewTimer(ase.RetryAfter)
					select {
					case <-t.C:
					case <-lctx.Done():
						t.Stop()
					}
				}
			}
		})
	}
	wg.Wait()
	_ = out.Encode(rep)
	return 0
}

// upstream is a fixed-window rate limiter: budget requests per windowLen
// from start, advertised in OpenAI's headers on every answer, 429 beyond.
type upstream struct {
	start    atomic.Int64 // unix ns; 0: not started (answers count nowhere)
	mu       sync.Mutex
	ok, over map[int]int // by window
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	now := time.Now()
	start := time.Unix(0, u.start.Load())
	win, left, reset := -1, budget, windowLen
	if u.start.Load() != 0 && !now.Before(start) {
		win = int(now.Sub(start) / windowLen)
		reset = start.Add(time.Duration(win+1) * windowLen).Sub(now)
	}
	u.mu.Lock()
	used := u.ok[win]
	allowed := used < budget
	if allowed {
		u.ok[win]++
		used++
	} else {
		u.over[win]++
	}
	u.mu.Unlock()
	left = budget - used
	h := w.Header()
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(budget))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(left))
	h.Set("x-ratelimit-reset-requests", reset.String())
	h.Set("Content-Type", "application/json")
	time.Sleep(latency)
	if !allowed {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	_, _ = io.WriteString(w, `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
}

// TestAdvertisedBudgetStopsTheFleetBeforeThe429: 3 processes × 8 goroutines
// share Redis and call an upstream that allows 20 requests per 3 s window.
// Over two windows the upstream sends at most one 429 per process per
// window, while at least 90 % of the budget is used.
func TestAdvertisedBudgetStopsTheFleetBeforeThe429(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 3 s windows")
	}
	srv := testutil.StartRedis(t)
	up := &upstream{ok: map[int]int{}, over: map[int]int{}}
	hs := httptest.NewServer(up)
	defer hs.Close()
	prefix := fmt.Sprintf("adv%x", time.Now().UnixNano()&0xffffff)

	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *json.Decoder
	}
	procs := make([]*proc, processes)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=1", envRedis+"="+srv.Addr, envURL+"="+hs.URL+"/v1", envPrefix+"="+prefix)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &proc{cmd: cmd, stdin: stdin, out: json.NewDecoder(stdout)}
		procs[i] = p
		t.Cleanup(func() {
			_ = stdin.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	for _, p := range procs {
		var ready map[string]bool
		require.NoError(t, p.out.Decode(&ready))
		require.True(t, ready["ready"])
	}
	start := time.Now()
	up.start.Store(start.UnixNano())
	end := start.Add(windows * windowLen)
	for _, p := range procs {
		_, err := io.WriteString(p.stdin, strconv.FormatInt(end.UnixNano(), 10)+"\n")
		require.NoError(t, err)
	}
	okCalls, gaveUp := 0, 0
	for i, p := range procs {
		var rep childReport
		require.NoError(t, p.out.Decode(&rep), "child %d", i)
		okCalls += rep.OK
		gaveUp += rep.GaveUp
		assert.Empty(t, rep.Errors, "child %d: calls that failed before the end of the load", i)
		require.NoError(t, p.cmd.Wait())
	}

	up.mu.Lock()
	defer up.mu.Unlock()
	used, throttled := 0, 0
	for w := range windows {
		used += up.ok[w]
		throttled += up.over[w]
	}
	for w, n := range up.over {
		if w < 0 || w >= windows {
			throttled += n // outside the measured windows still counts
		}
	}
	t.Logf("over %d windows of %d requests: %d answered (%.0f %% of the budget), %d answered 429 (windows: ok %v, 429 %v); %d calls succeeded, %d ended at once because the budget reset after their deadline",
		windows, budget, used, 100*float64(used)/float64(windows*budget), throttled, up.ok, up.over, okCalls, gaveUp)
	assert.LessOrEqual(t, throttled, processes*windows, "at most one 429 per process per window")
	assert.GreaterOrEqual(t, used*10, windows*budget*9, "at least 90 % of the budget used")
}
