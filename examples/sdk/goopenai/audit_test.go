package main

// go-openai through pgw's governed client: a stream cut after its first
// content reaches the SDK as an error, never as the clean end of a shorter
// answer.

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// go-openai's stream returns whatever error its body's read gives: were it
// io.EOF, a cut answer would look whole. The governed body's cut matches
// io.ErrUnexpectedEOF, the call is the source's failure, and no backup is
// asked once content reached the caller.
func TestGoOpenAIStreamCutAfterContentIsAnUnexpectedEOF(t *testing.T) {
	r := newGovRig(t, wire.Events(chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"one "}`, "")))
	stream, err := r.client.CreateChatCompletionStream(context.Background(), request("hello"))
	require.NoError(t, err)
	var got string
	for {
		resp, err := stream.Recv()
		if err != nil {
			require.False(t, errors.Is(err, io.EOF), "a cut stream must not end as io.EOF: %v", err)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			break
		}
		if len(resp.Choices) > 0 {
			got += resp.Choices[0].Delta.Content
		}
	}
	stream.Close()
	assert.Equal(t, "one ", got)
	require.Eventually(t, func() bool { return len(r.rec.Calls()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
	assert.Equal(t, 0, r.backup.Count(), "content reached the caller: no fail-over")
}
