package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// The attempt that lost a hedge race ran its time without delivering: that
// time is a lower bound of its source's, and raises the source's latency
// (peak-EWMA) to it, so that a source that stalls and is hedged every time
// does not look the fastest to BALANCE=latency — as it would if a lost race
// said nothing — and is tried after the one that won.
func TestHedgeTheLosersTimeIsALowerBoundOfItsSourcesLatency(t *testing.T) {
	e := newHedgeEnv(t, nil)
	tr := newGatedChat("s1", "s2")
	chat := retry.NewChat(e.loop, tr, retry.ChatOptions{})
	done := make(chan error, 1)
	go func() {
		s, err := chat.Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 100})
		if err == nil {
			drain(t, s)
			err = s.Close()
		}
		done <- err
	}()
	require.Equal(t, "s1", <-tr.opened)
	e.clk.Advance(time.Second)
	e.timer.fire(t)
	require.Equal(t, "s2", <-tr.opened)
	e.clk.Advance(2 * time.Second)
	tr.release("s2")
	require.NoError(t, <-done)
	e.requireGivenBack(t)

	ewma := map[string]time.Duration{}
	for _, s := range e.loop.Admission().Latency().Stats() {
		ewma[s.Source] = s.EWMA
	}
	assert.Equal(t, 2*time.Second, ewma["s2"], "the winner's time to its first chunk")
	assert.Equal(t, 3*time.Second, ewma["s1"], "the loser ran 3 s without delivering")
}
