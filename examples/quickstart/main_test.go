package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The demo is part of the product (make demo): it must keep running and
// keep showing what its doc comment promises.
func TestQuickstartPrintsTheTimeline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, false))
	s := out.String()
	for _, want := range []string{
		"SOLO_WAIT__CIRCUIT_OPEN=wait",
		"attempt 1 on primary  FAILURE",
		"breaker of primary: closed → open",
		"answered by backup",
		"breaker of primary: open → half_open",
		"breaker of primary: half_open → closed",
		"10 vectors of 8 dimensions, in input order, from 3 requests",
		`OCR text: "FAKE OCR TEXT"`,
		"PGW-CB-OPEN error: RetryAfter",
		"SOLO_WAIT  no source may run (solo=circuit_open); waiting about",
		"SOLO_WAIT  wait over after",
		"answered after",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "sk-demo", "API keys are never printed")
}

// With -metrics the demo serves /metrics and prints what it serves.
func TestQuickstartServesMetrics(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, true))
	s := out.String()
	for _, want := range []string{
		`pgw_attempts_total{outcome="failure",scope="CHAT",source="primary"} 2`,
		`pgw_calls_total{result="success",scope="SOLO_WAIT"} 1`,
		`pgw_breaker_state{scope="CHAT",source="primary"} 0`,
		`pgw_gate_rejections_total{reason="circuit_open",scope="SOLO_FAST",source="solo"}`,
	} {
		assert.Contains(t, s, want)
	}
}
