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
