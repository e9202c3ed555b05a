package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The demo prints every span as JSON, then the tree: the fail-over's two
// attempts, the stream's attempt with its time to first chunk, and the
// waiting call's wait event and probe, all in the caller's one trace.
func TestQuickstartPrintsTheTrace(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, false))
	s := out.String()
	jsonPart, tree, ok := strings.Cut(s, "== the trace")
	require.True(t, ok, s)
	assert.Equal(t, 9, strings.Count(jsonPart, "\n{\"Name\":"), "handler, three calls, five attempts")
	assert.Equal(t, 1, strings.Count(tree, "trace "), "one trace")
	assert.Equal(t, 3, strings.Count(tree, "pgw.call"))
	assert.Contains(t, tree, "pgw.source=primary pgw.attempt=1 pgw.breaker.state=closed pgw.probe=false pgw.outcome=failure error.type=503")
	assert.Contains(t, tree, "pgw.source=backup pgw.attempt=2")
	assert.Contains(t, tree, "· event pgw.wait")
	assert.Contains(t, tree, "pgw.breaker.state=half_open pgw.probe=true pgw.outcome=success")
	assert.Equal(t, 3, strings.Count(tree, "gen_ai.response.time_to_first_chunk="), "every answered chat attempt streams")
}
