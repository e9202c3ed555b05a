package pgw_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// gatedItems holds its first item back until release is closed, whatever
// its ctx says: an upstream whose first chunk comes late and all at once.
type gatedItems struct {
	release <-chan struct{}
	items   []string
	mu      sync.Mutex
	closed  bool
}

func (g *gatedItems) Recv() (string, error) {
	<-g.release
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return "", io.ErrClosedPipe
	}
	if len(g.items) == 0 {
		return "", io.EOF
	}
	it := g.items[0]
	g.items = g.items[1:]
	return it, nil
}

func (g *gatedItems) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return nil
}

func (g *gatedItems) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func inFlight(t *testing.T, gw *pgw.GatewayClient, scope string) int64 {
	t.Helper()
	st, err := gw.Latency(scope)
	require.NoError(t, err)
	n := int64(0)
	for _, s := range st {
		n += s.InFlight
	}
	return n
}

func observed(t *testing.T, gw *pgw.GatewayClient, scope, source string) uint64 {
	t.Helper()
	st, err := gw.Latency(scope)
	require.NoError(t, err)
	for _, s := range st {
		if s.Source == source {
			return s.Observed
		}
	}
	t.Fatalf("no source %q", source)
	return 0
}

// A CallStream whose primary is slow to its first item is hedged: the
// backup's stream wins; the primary's, which produced its first item only
// after it lost, is closed and given back (its in-flight permit too) without
// a byte of it reaching the caller or a second end of the call.
func TestCallStreamHedgeLoserIsDiscarded(t *testing.T) {
	before := runtime.NumGoroutine()
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":               "GEN",
		"GEN__SOURCES":             "slow,fast",
		"GEN__HEDGE_AFTER_S":       "0.01",
		"GEN__SLOW__PRIORITY":      "0",
		"GEN__FAST__PRIORITY":      "1",
		"GEN__SLOW__MAX_IN_FLIGHT": "1",
	})
	release := make(chan struct{})
	loser := &gatedItems{release: release, items: []string{"slow-1", "slow-2"}}
	open := func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		if src.Name == "slow" {
			return loser, nil
		}
		return pgw.FromIterator[string](&sliceIter{items: []string{"fast-1", "fast-2"}}), nil
	}
	st, err := pgw.CallStream(context.Background(), gw, "GEN", open)
	require.NoError(t, err)
	assert.Equal(t, "fast", st.Source())
	close(release) // the loser's first item arrives after the race is over
	got, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"fast-1", "fast-2"}, got)
	require.NoError(t, st.Close())

	require.Eventually(t, loser.isClosed, 5*time.Second, time.Millisecond, "the loser's stream is closed")
	require.Eventually(t, func() bool { return inFlight(t, gw, "GEN") == 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), observed(t, gw, "GEN", "fast"), "the winner's time to its first item is observed")
	assert.ElementsMatch(t, []string{"slow:hedge_lost", "fast:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results(), "the call ends once")

	// slow's only in-flight permit was given back: it takes the next call.
	fastNow := func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](&sliceIter{items: []string{src.Name}}), nil
	}
	st, err = pgw.CallStream(context.Background(), gw, "GEN", fastNow)
	require.NoError(t, err)
	assert.Equal(t, "slow", st.Source())
	_, err = collect(t, st)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, 5*time.Second, 5*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// A stream through the governed http.Client is hedged the same way: the
// backup's events reach the SDK, the primary's request is cancelled and
// given back as a lost race, never a failure.
func TestHTTPClientStreamIsHedged(t *testing.T) {
	gw, rec, primary, backup := twoSources(t, map[string]string{
		"CHAT__HEDGE_AFTER_S":          "0.01",
		"CHAT__PRIMARY__MAX_IN_FLIGHT": "1",
	})
	primary.SetDefault(testutil.Chat, testutil.Reply{Text: "from primary", FirstTokenDelay: time.Minute})
	backup.SetDefault(testutil.Chat, testutil.Reply{Text: "from backup"})

	resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readBody(t, resp)
	assert.Contains(t, body, "from")
	assert.Contains(t, body, "backup")
	assert.NotContains(t, body, "primary")
	assert.Equal(t, 1, primary.Requests(testutil.Chat))

	require.Eventually(t, func() bool { return inFlight(t, gw, "CHAT") == 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), observed(t, gw, "CHAT", "backup"), "the winner's time to its first chunk is observed")
	assert.ElementsMatch(t, []string{"primary:hedge_lost", "backup:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results())

	// The primary's permit is free again: it answers the next request.
	primary.SetDefault(testutil.Chat, testutil.Reply{Text: "from primary"})
	body = readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true)))
	assert.True(t, strings.Contains(body, "primary"), body)
}
