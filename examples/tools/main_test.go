package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example is part of the product: it must keep running and keep
// showing the round trip and the fail-over its doc comment promises.
func TestToolsExampleRoundTripFailsOverToAnthropic(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, true))
	s := out.String()
	for _, want := range []string{
		"answered by openai, finish_reason=tool_calls",
		`model asks get_weather({"city":"Paris"})`,
		"answered by claude, finish_reason=stop",
		`"It is 18 °C in Paris right now."`,
		`"tool_call_id": "call_1"`,
		`"type": "tool_result"`,
		`"input_schema"`,
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "sk-demo", "API keys are never printed")
}
