package pgw_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// slowFirst never answers on source "slow" (until its ctx ends); "fast"
// answers at once.
type slowFirst struct{}

func (slowFirst) ChatStream(ctx context.Context, src pgw.Source, _ pgw.ChatRequest) (pgw.ChatStream, error) {
	return &oneChunk{ctx: ctx, name: src.Name}, nil
}

type oneChunk struct {
	ctx  context.Context
	name string
	n    int
}

func (s *oneChunk) Recv() (pgw.ChatChunk, error) {
	if s.name == "slow" {
		<-s.ctx.Done()
		return pgw.ChatChunk{}, s.ctx.Err()
	}
	s.n++
	if s.n > 1 {
		return pgw.ChatChunk{}, io.EOF
	}
	return pgw.ChatChunk{Delta: "hi from " + s.name}, nil
}

func (s *oneChunk) Close() error { return nil }

func TestGatewayHedgesChatAndCallAndShowsLatency(t *testing.T) {
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":             "CHAT,RERANK",
		"CHAT__SOURCES":          "slow,fast",
		"CHAT__HEDGE_AFTER_S":    "0.01",
		"CHAT__BALANCE":          "weighted",
		"CHAT__SLOW__PRIORITY":   "0", // slow is always tried first
		"CHAT__FAST__PRIORITY":   "1",
		"RERANK__SOURCES":        "slow,fast",
		"RERANK__HEDGE_AFTER_S":  "0.01",
		"RERANK__FAST__PRIORITY": "1",
	}, pgw.WithChatTransport(slowFirst{}))

	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "hi from fast", resp.Content)
	assert.Equal(t, "fast", resp.Source)

	v, err := pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "slow" {
			<-ctx.Done()
			return "", pgw.Usage{}, ctx.Err()
		}
		return "ranked by " + src.Name, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ranked by fast", v)

	require.Eventually(t, func() bool {
		st, err := gw.Latency("CHAT")
		return err == nil && st[0].InFlight == 0 && st[1].InFlight == 0
	}, 5*time.Second, time.Millisecond)
	st, err := gw.Latency("CHAT")
	require.NoError(t, err)
	assert.Equal(t, "slow", st[0].Source)
	assert.Positive(t, st[0].EWMA, "the lost attempt's time is a lower bound of slow's")
	assert.Equal(t, uint64(1), st[1].Observed)
	var b strings.Builder
	require.NoError(t, gw.WriteLatencyStatus(&b))
	assert.Contains(t, b.String(), "SCOPE")
	assert.Regexp(t, `RERANK\s+fast\s+\S+\s+0\s`, b.String())
	outcomes := strings.Join(rec.Outcomes(), ",")
	assert.Contains(t, outcomes, "hedge_lost")
	assert.NotContains(t, outcomes, "failure", "a lost race is no failure")
	_, err = gw.Latency("NOPE")
	assert.Error(t, err)
}
