package pgw_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// auditNilStream is an SDK's stream type whose methods, like go-openai's
// *ChatCompletionStream, dereference their receiver: a nil one panics.
type auditNilStream struct{ items []string }

func (s *auditNilStream) Recv() (string, error) {
	if len(s.items) == 0 {
		return "", io.EOF
	}
	it := s.items[0]
	s.items = s.items[1:]
	return it, nil
}

func (s *auditNilStream) Close() error { s.items = nil; return nil }

// auditOpenSDK opens as go-openai's CreateChatCompletionStream does: a nil
// *stream with its error, returned as it is.
func auditOpenSDK(fail error) (*auditNilStream, error) {
	if fail != nil {
		return nil, fail
	}
	return &auditNilStream{items: []string{"x"}}, nil
}

// An open function that returns an SDK's (stream, error) as it is hands
// CallStream a non-nil Streamer holding a nil pointer along with the error:
// it is taken as no stream (not closed, which would panic), the error
// classified, and the call fails over.
func TestCallStreamOpenReturningATypedNilStreamWithItsError(t *testing.T) {
	gw, rec := streamScope(t)
	st, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		if src.Name == "a" {
			return auditOpenSDK(&pgw.HTTPError{StatusCode: 503, Message: "unavailable"})
		}
		return auditOpenSDK(nil)
	}, pgw.FirstItem(nonEmpty))
	require.NoError(t, err)
	got, err := collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, got)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{"a:failure", "b:success"}, rec.Outcomes())
}

// A typed nil stream without an error is neither: a clear error, not a
// panic at the first Recv.
func TestCallStreamOpenReturningATypedNilStreamAlone(t *testing.T) {
	gw, _ := streamScope(t)
	_, err := pgw.CallStream(context.Background(), gw, "GEN", func(ctx context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		return (*auditNilStream)(nil), nil
	}, pgw.FirstItem(nonEmpty))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "neither a stream nor an error")
}
