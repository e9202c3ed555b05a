package pgw_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

func isEnd(s string) bool { return s == "END" }

// An SDK's stream on a body closed mid-answer often ends cleanly (openai-go's
// Next reports false with a nil Err when "data: [DONE]" never came): with a
// TerminalItem, io.EOF before it is a cut — the caller gets an error matching
// io.ErrUnexpectedEOF, not a clean end of a shorter answer, and the call is
// the source's failure.
func TestCallStreamEOFBeforeTheTerminalItemIsACut(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](&sliceIter{items: []string{"x", "y"}}), nil
	}, pgw.TerminalItem(isEnd))
	require.NoError(t, err)
	got, err := collect(t, st)
	assert.Equal(t, []string{"x", "y"}, got)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:failure"}, rec.Outcomes(), "content reached the caller: no fail-over")
	assert.Equal(t, []string{"error"}, rec.Results())
}

// A stream that ends cleanly before its first item, with a TerminalItem,
// fails over; the backup's whole stream, terminal item included, is a
// success.
func TestCallStreamEOFBeforeTheFirstItemWithATerminalItemFailsOver(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		if src.Name == "a" {
			return pgw.FromIterator[string](&sliceIter{}), nil
		}
		return pgw.FromIterator[string](&sliceIter{items: []string{"x", "END"}}), nil
	}, pgw.TerminalItem(isEnd))
	require.NoError(t, err)
	got, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "END"}, got)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:failure", "b:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results())
}

// ctxAfterStream yields its items one by one, each only while its ctx
// lives (an SDK's stream reads its body under the attempt's ctx), then
// io.EOF.
type ctxAfterStream struct {
	ctx   context.Context
	items []string
}

func (s *ctxAfterStream) Recv() (string, error) {
	if err := s.ctx.Err(); err != nil {
		return "", err
	}
	if len(s.items) == 0 {
		return "", io.EOF
	}
	it := s.items[0]
	s.items = s.items[1:]
	return it, nil
}

func (s *ctxAfterStream) Close() error { return nil }

// The terminal item ends the call — the source's success, its admission
// back at once — but not the stream: what follows it (openai-go's last
// chunk of usage comes after the finish reason) still reaches the caller,
// and the stream then ends with io.EOF, not with the cancellation of an
// attempt that ended.
func TestCallStreamItemsAfterTheTerminalItemStillReachTheCaller(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return &ctxAfterStream{ctx: ctx, items: []string{"x", "y", "END", "usage"}}, nil
	}, pgw.TerminalItem(isEnd))
	require.NoError(t, err)
	var got []string
	for {
		it, err := st.Recv()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		got = append(got, it)
		if it == "END" {
			assert.Equal(t, []string{"a:success"}, rec.Outcomes(), "the terminal item is the success")
		}
	}
	assert.Equal(t, []string{"x", "y", "END", "usage"}, got)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results())
}

// An error past the terminal item — the body cut after the last event —
// is not part of the answer: the caller gets io.EOF and the call stays a
// success.
func TestCallStreamErrorAfterTheTerminalItemIsTheEnd(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return pgw.FromIterator[string](&sliceIter{items: []string{"x", "y", "END"}, err: io.ErrUnexpectedEOF}), nil
	}, pgw.TerminalItem(isEnd))
	require.NoError(t, err)
	got, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "y", "END"}, got)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:success"}, rec.Outcomes())
	assert.Equal(t, []string{"success"}, rec.Results())
}
