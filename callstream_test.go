package pgw_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// sliceIter is an SDK-style Next/Current/Err stream over a slice.
type sliceIter struct {
	mu     sync.Mutex
	items  []string
	err    error
	i      int
	cur    string
	closed bool
}

func (s *sliceIter) Next() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.i >= len(s.items) {
		return false
	}
	s.cur = s.items[s.i]
	s.i++
	return true
}
func (s *sliceIter) Current() string { return s.cur }
func (s *sliceIter) Err() error      { return s.err }
func (s *sliceIter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func streamScope(t *testing.T) (*pgw.GatewayClient, *recorder) {
	return newGateway(t, map[string]string{
		"PGW_SCOPES":        "GEN",
		"GEN__SOURCES":      "a,b",
		"GEN__A__PRIORITY":  "0",
		"GEN__B__PRIORITY":  "1",
		"GEN__MAX_ATTEMPTS": "4",
	})
}

func nonEmpty(s string) bool { return s != "" }

func collect(t *testing.T, st *pgw.ItemStream[string]) ([]string, error) {
	t.Helper()
	var out []string
	for {
		it, err := st.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, it)
	}
}

func TestCallStreamFailsOverUntilTheFirstItem(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		if src.Name == "a" {
			// The preamble arrives, then the stream breaks: nothing reached the caller.
			return pgw.FromIterator[string](&sliceIter{items: []string{""}, err: errors.New("connection reset")}), nil
		}
		return pgw.FromIterator[string](&sliceIter{items: []string{"", "x", "y"}}), nil
	}, pgw.FirstItem(nonEmpty))
	require.NoError(t, err)
	assert.Equal(t, "b", st.Source())
	got, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"", "x", "y"}, got)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:failure", "b:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results())
}

func TestCallStreamHoldsTheAdmissionUntilTheEndAndSettlesUsage(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](&sliceIter{items: []string{"x", "y", "usage"}}), nil
	}, pgw.ItemUsage(func(s string) (pgw.Usage, bool) {
		return pgw.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}, s == "usage"
	}))
	require.NoError(t, err)
	assert.True(t, st.Held())
	assert.Empty(t, rec.Results(), "the call runs until the stream ends")
	_, err = collect(t, st)
	require.NoError(t, err)
	assert.False(t, st.Held())
	assert.Equal(t, 5, st.Usage().TotalTokens)
	require.Len(t, rec.Attempts(), 1)
	assert.Equal(t, 5, rec.Attempts()[0].Usage.TotalTokens)
	require.NoError(t, st.Close())
}

func TestCallStreamMidStreamErrorIsAFailure(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](&sliceIter{items: []string{"x"}, err: &pgw.HTTPError{StatusCode: 502}}), nil
	})
	require.NoError(t, err)
	_, err = collect(t, st)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, []string{"a:failure"}, rec.Outcomes(), "a cut after the first item is not retried")
	require.NoError(t, st.Close())
}

func TestCallStreamEarlyCloseIsReleased(t *testing.T) {
	gw, rec := streamScope(t)
	it := &sliceIter{items: []string{"x", "y"}}
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](it), nil
	})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.True(t, it.closed)
	assert.Equal(t, []string{"a:abandoned"}, rec.Outcomes())
	assert.Equal(t, []string{"abandoned"}, rec.Results())
}

func TestCallStreamCallerErrorIsReturnedAtOnce(t *testing.T) {
	gw, rec := streamScope(t)
	_, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return nil, &pgw.HTTPError{StatusCode: 400, Message: "bad"}
	})
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, []string{"a:caller_error"}, rec.Outcomes())
}

func TestCallStreamCloseOfTheGatewayClosesOpenStreams(t *testing.T) {
	gw, _ := streamScope(t)
	it := &sliceIter{items: []string{"x", "y"}}
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](it), nil
	})
	require.NoError(t, err)
	require.NoError(t, gw.Close())
	assert.True(t, it.closed)
	assert.False(t, st.Held())
}

func TestCallStreamRejectsBadArguments(t *testing.T) {
	gw, _ := streamScope(t)
	_, err := pgw.CallStream[string](context.Background(), nil, "GEN", nil)
	require.Error(t, err)
	_, err = pgw.CallStream[string](context.Background(), gw, "GEN", nil)
	require.ErrorContains(t, err, "nil open")
	_, err = pgw.CallStream(context.Background(), gw, "NOPE", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return nil, nil
	})
	var use *pgw.UnknownScopeError
	require.ErrorAs(t, err, &use)
}
