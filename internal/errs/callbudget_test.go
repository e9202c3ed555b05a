package errs_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/errs"
)

type coded interface{ Code() string }

func TestCallLevelErrorsCarryStableCodes(t *testing.T) {
	cases := []struct {
		err  error
		code string
	}{
		{&errs.CircuitOpenError{Scope: "CHAT"}, "PGW-CB-OPEN"},
		{&errs.AllSourcesExhausted{Scope: "CHAT", Reason: errs.ReasonStalled}, "PGW-EXHAUSTED"},
		{&errs.GatewayUnavailableError{Scope: "CHAT", Last: errors.New("x")}, "PGW-UNAVAILABLE"},
		{&errs.BatchError{Scope: "EMBEDDING"}, "PGW-PARTIAL"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			var ce coded
			require.ErrorAs(t, fmt.Errorf("wrapped: %w", c.err), &ce)
			assert.Equal(t, c.code, ce.Code())
		})
	}
}

func TestCircuitOpenErrorMessageNamesScopeSourcesAndWait(t *testing.T) {
	e := &errs.CircuitOpenError{Scope: "CHAT", Sources: []string{"a", "b"}, RetryAfter: 42 * time.Second}
	assert.Equal(t, `pgw: scope "CHAT": circuit open on every source (a, b); retry after 42s`, e.Error())
	e.RetryAfter = 0
	assert.Contains(t, e.Error(), "no certain wait")
}

func TestAllSourcesExhaustedListsPerSourceReasonsSorted(t *testing.T) {
	e := &errs.AllSourcesExhausted{Scope: "OCR", Reason: errs.ReasonStalled,
		Reasons: map[string]string{"b": "rate_limited", "a": "circuit_open"}}
	assert.Equal(t, `pgw: scope "OCR": all sources exhausted (stalled): a=circuit_open, b=rate_limited`, e.Error())
}

func TestGatewayUnavailableUnwrapsToTheLastAttemptError(t *testing.T) {
	last := &errs.HTTPError{StatusCode: 503, Message: "overloaded"}
	e := error(&errs.GatewayUnavailableError{Scope: "CHAT", Attempts: 3, Last: last})
	var he *errs.HTTPError
	require.ErrorAs(t, e, &he)
	assert.Equal(t, 503, he.StatusCode)
	assert.Contains(t, e.Error(), "after 3 attempts")
}

func TestBatchErrorReachesEveryPartError(t *testing.T) {
	open := &errs.CircuitOpenError{Scope: "EMBEDDING"}
	e := error(&errs.BatchError{Scope: "EMBEDDING", Total: 10, Failed: []errs.BatchFailure{
		{Start: 0, End: 4, Err: errors.New("boom")},
		{Start: 8, End: 10, Err: open},
	}})
	var got *errs.CircuitOpenError
	require.ErrorAs(t, e, &got)
	assert.Same(t, open, got)
	assert.Contains(t, e.Error(), "6 of 10 inputs failed")
}

func TestCallEndingErrorsUnwrapToTheLastAttempt(t *testing.T) {
	bad := &errs.HTTPError{StatusCode: 401, Message: "invalid api key"}
	for _, e := range []error{
		&errs.CircuitOpenError{Scope: "CHAT", Sources: []string{"a"}, Last: bad},
		&errs.AllSourcesExhausted{Scope: "CHAT", Reason: errs.ReasonStalled, Last: bad},
	} {
		var he *errs.HTTPError
		require.ErrorAs(t, e, &he)
		assert.Equal(t, 401, he.StatusCode)
		assert.Contains(t, e.Error(), "last attempt: upstream http 401")
	}
}

func TestHTTPErrorWithoutAMessageEndsAtItsOrigin(t *testing.T) {
	e := &errs.HTTPError{StatusCode: 599, Scope: "CHAT", Source: "a"}
	assert.Equal(t, "upstream http 599 from scope CHAT, source a", e.Error(), "no status text, no dangling colon")
}

// A source an operator forced open rejects with RetryAfter 0 as a probe in
// flight does; the message names both causes, so an operator who ran
// pgw open is not sent looking for a probe.
func TestCircuitOpenErrorWithoutACertainWaitNamesTheOverride(t *testing.T) {
	msg := (&errs.CircuitOpenError{Scope: "CHAT", Sources: []string{"solo"}}).Error()
	assert.Contains(t, msg, "no certain wait")
	assert.Contains(t, msg, "a probe is in flight")
	assert.Contains(t, msg, "forced open")
}
