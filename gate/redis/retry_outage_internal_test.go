package redis

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A not-here-not-now reply is retried only while no prober of the client
// reports an outage: once its prober has started one, the caller stops
// waiting for Redis at once and the reply is served as the outage
// (ErrUnreachable), the way every later call is.
func TestRetryOfANotServedReplyStopsWhenTheProberStartsAnOutage(t *testing.T) {
	s := newLua("return 7")
	readonly := replyErr("READONLY You can't write against a read only replica.")

	// No prober: the retry runs until the reply changes.
	c := &notHereScripter{replies: []error{readonly, readonly, nil}}
	v, err := runScript(context.Background(), c, s, []string{"k"}).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 7, v)
	assert.Equal(t, 3, c.calls)

	// A prober of this client that answers: the same.
	c = &notHereScripter{replies: []error{readonly, readonly, nil}}
	up := &Prober{}
	probers.Store(processor(c), up)
	t.Cleanup(func() { probers.Delete(processor(c)) })
	_, err = runScript(context.Background(), c, s, []string{"k"}).Int64()
	require.NoError(t, err)
	assert.Equal(t, 3, c.calls)

	// Its prober reports an outage: no second try.
	down := &Prober{}
	down.down.Store(true)
	c2 := &notHereScripter{replies: []error{readonly, nil}}
	probers.Store(processor(c2), down)
	t.Cleanup(func() { probers.Delete(processor(c2)) })
	err = wrapErr(context.Background(), "Admit", "hot", runScript(context.Background(), c2, s, []string{"k"}).Err())
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Equal(t, 1, c2.calls, "no retry once the prober reports an outage")

	// The outage starts during the retry: it ends there.
	mid := &Prober{}
	c3 := &auditRetryScripter{notHereScripter: &notHereScripter{replies: []error{readonly}}, after: 3, pr: mid}
	probers.Store(processor(c3), mid)
	t.Cleanup(func() { probers.Delete(processor(c3)) })
	require.Error(t, runScript(context.Background(), c3, s, []string{"k"}).Err())
	assert.Equal(t, 3, c3.calls, "the retry ends with the outage")
}

// auditRetryScripter is a notHereScripter whose prober pr starts an outage
// once it has answered after commands.
type auditRetryScripter struct {
	*notHereScripter
	after int
	pr    *Prober
}

func (s *auditRetryScripter) Process(ctx context.Context, cmd goredis.Cmder) error {
	err := s.notHereScripter.Process(ctx, cmd)
	if s.calls == s.after {
		s.pr.down.Store(true)
	}
	return err
}

// auditValueClient is a processor of a type that is not comparable.
type auditValueClient struct {
	*notHereScripter
	tags []string
}

// A client of a type that cannot key a map is not watched, and its
// retries neither panic nor stop.
func TestRetryOfANotServedReplyOnAnIncomparableClient(t *testing.T) {
	s := newLua("return 7")
	c := auditValueClient{notHereScripter: &notHereScripter{replies: []error{replyErr("TRYAGAIN x"), nil}}, tags: []string{"a"}}
	v, err := runScript(context.Background(), c, s, []string{"k"}).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, 7, v)
	assert.Equal(t, 2, c.calls)
}
