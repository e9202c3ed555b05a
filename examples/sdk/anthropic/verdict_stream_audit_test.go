package main

// pgw's verdict on a streamed request, with anthropic-sdk-go's own retries
// left on: every source overloaded before its first content. The SDK's
// stream reports pgw's synthesized answer as its own error type, does not
// re-send it (one governed call), and pgw's error is reachable with
// pgw.ErrorFrom.

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

func TestAnthropicSDKStreamedVerdictIsNotRetried(t *testing.T) {
	r := newGovRig(t, wire.JSON(529, anthropicError("overloaded_error", "Overloaded")), []string{"MAX_ATTEMPTS", "2"}, option.WithMaxRetries(2))
	st := r.client.Messages.NewStreaming(context.Background(), params("hello"))
	for st.Next() {
	}
	err := st.Err()
	require.NoError(t, st.Close())
	var aerr *anthropic.Error
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, pgw.SDKVerdictStatus, aerr.StatusCode)
	assert.Len(t, r.rec.Calls(), 1, "the SDK did not retry pgw's verdict")
	assert.Equal(t, 2, r.primary.Count()+r.backup.Count())
	var gue *pgw.GatewayUnavailableError
	assert.ErrorAs(t, pgw.ErrorFrom(err), &gue)
}
