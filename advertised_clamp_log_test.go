package pgw_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// countingHandler is a user's slog.Handler that counts records by message
// and level.
type countingHandler struct {
	mu     sync.Mutex
	counts map[slog.Level]map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts[r.Level] == nil {
		h.counts[r.Level] = map[string]int{}
	}
	h.counts[r.Level][r.Message]++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) count(l slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[l][msg]
}

// A daily window (Groq's requests per day, an account's requests per day)
// legitimately resets hours ahead on every answer. The clamp is logged at
// Info once per source, not on every answer: a busy service would
// otherwise log an Info line per call all day. Later clamps go to Debug.
func TestAResetFarAheadIsLoggedAtInfoOncePerSource(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, headers("x-ratelimit-limit-requests", "14400",
		"x-ratelimit-remaining-requests", "9000", "x-ratelimit-reset-requests", "5h0m0s"))
	h := &countingHandler{counts: map[slog.Level]map[string]int{}}
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":           "CHAT",
		"CHAT__SOURCES":        "solo",
		"CHAT__SOLO__BASE_URL": adv.URL,
	}, pgw.WithLogger(slog.New(h)))
	const calls = 5
	for range calls {
		_, err := gw.Chat(context.Background(), hello())
		require.NoError(t, err)
	}
	const msg = "pgw: rate-limit reset too far ahead; clamped"
	assert.Equal(t, 1, h.count(slog.LevelInfo, msg), "once per source at Info")
	assert.Equal(t, calls-1, h.count(slog.LevelDebug, msg), "the later clamps at Debug")
}
