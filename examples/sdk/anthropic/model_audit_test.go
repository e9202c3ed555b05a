package main

// A source's MODEL replaces the model anthropic-sdk-go put in the body,
// streamed or not; a source without one gets the SDK's.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

func TestAnthropicSDKModelIsTheSources(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		def := wire.JSON(200, message)
		if streamed {
			def = wire.Events(messageStream...)
		}
		r := newGovRig(t, def, []string{"BACKUP__MODEL", "claude-opus-4-1"})
		r.primary.Next(wire.JSON(529, anthropicError("overloaded_error", "Overloaded")))
		var err error
		if streamed {
			_, err = Stream(context.Background(), r.client, "hello")
		} else {
			_, err = Ask(context.Background(), r.client, "hello")
		}
		require.NoError(t, err)
		model := func(s *wire.Server) any {
			require.Equal(t, 1, s.Count())
			var body map[string]any
			require.NoError(t, json.Unmarshal(s.Requests()[0].Body, &body))
			return body["model"]
		}
		sdkModel := string(params("hello").Model)
		assert.Equal(t, sdkModel, model(r.primary), "no MODEL: the SDK's goes through")
		assert.Equal(t, "claude-opus-4-1", model(r.backup), "streamed %v", streamed)
	}
}
