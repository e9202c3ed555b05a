package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// A stream whose stop reason and usage came is whole even when the body
// ends before message_stop, as pgw's own Anthropic transport takes it; one
// cut before its stop reason is the source's failure.
func TestAnthropicSDKStreamEndingAfterItsStopReasonIsWhole(t *testing.T) {
	r := newGovRig(t, wire.Events(messageStream[:7]...), nil)
	st := r.client.Messages.NewStreaming(context.Background(), params("hello"))
	var text strings.Builder
	for st.Next() {
		if e := st.Current(); e.Type == "content_block_delta" {
			text.WriteString(e.Delta.Text)
		}
	}
	require.NoError(t, st.Err())
	require.NoError(t, st.Close())
	assert.Equal(t, "Hello there", text.String())
	assert.Equal(t, []string{"primary:" + pgw.OutcomeSuccess}, r.rec.Outcomes())

	r = newGovRig(t, wire.Events(messageStream[:6]...), nil)
	st = r.client.Messages.NewStreaming(context.Background(), params("hello"))
	for st.Next() {
	}
	require.Error(t, st.Err(), "cut before its stop reason")
	_ = st.Close()
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
}
