package pgw_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// sdkHeadersChat is an SDK on its own HTTP client inside pgw.Call: it posts
// a chat request to the source's BASE_URL and returns an error shaped as
// openai-go's (the answer kept in a Response field) for any status but 200.
func sdkHeadersChat(t *testing.T) func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, src.BaseURL+"/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			return "", pgw.Usage{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return "", pgw.Usage{}, err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", pgw.Usage{}, &openAIShapedError{StatusCode: resp.StatusCode, Request: req, Response: resp, raw: string(body)}
		}
		return src.Name, pgw.Usage{}, nil
	}
}

// An SDK's 429 that carries no Retry-After but says the request window is
// spent holds the source to the window's reset inside pgw.Call, as the
// same answer through pgw's own transports does: the call ends with the
// reset as its certain wait, and the source is not asked again before it.
func TestSDKErrorsSpentWindowHoldsTheSourceToItsReset(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusTooManyRequests})
	adv := newAdvertiser(t, up, spentOpenAI("40s"))
	gw, _ := newGateway(t, soloChat(adv.URL))
	attempt := sdkHeadersChat(t)
	for i := range 2 {
		_, err := pgw.Call(context.Background(), gw, "CHAT", attempt)
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase, "call %d", i)
		assert.Equal(t, pgw.ReasonQuotaExhausted, ase.Reason, "call %d", i)
		assert.InDelta(t, 40, ase.RetryAfter.Seconds(), 2, "call %d: the window's reset is the certain wait", i)
	}
	assert.Equal(t, int64(1), adv.hits.Load(), "not retried into a second 429, nor asked by the next call")
	snap, err := gw.Snapshot(context.Background(), "CHAT", "solo")
	require.NoError(t, err)
	require.NotNil(t, snap.Advertised, "the SDK's answer reached the budget")
	assert.Equal(t, int64(60), snap.Advertised.Requests.Limit)
	assert.Equal(t, int64(0), snap.Advertised.Requests.Remaining)
}

// A failed SDK answer that says the window is spent keeps its source out of
// the next calls, which go to the backup without asking it — also when the
// attempts race as hedges.
func TestSDKErrorsSpentWindowSendsTheNextCallsToTheBackup(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		name := "alone"
		if hedged {
			name = "hedged"
		}
		t.Run(name, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
			adv := newAdvertiser(t, up, spentOpenAI("30s"))
			backup := testutil.NewUpstream(t)
			env := map[string]string{
				"PGW_SCOPES":              "CHAT",
				"CHAT__SOURCES":           "first,second",
				"CHAT__FIRST__BASE_URL":   adv.URL,
				"CHAT__FIRST__PRIORITY":   "0",
				"CHAT__SECOND__BASE_URL":  backup.URL,
				"CHAT__SECOND__PRIORITY":  "1",
				"CHAT__FAILURE_THRESHOLD": "5",
				"CHAT__POLL_INTERVAL_S":   "0.01",
			}
			if hedged {
				env["CHAT__HEDGE_AFTER_S"] = "30"
			}
			gw, _ := newGateway(t, env)
			attempt := sdkHeadersChat(t)
			for i := range 3 {
				got, err := pgw.Call(context.Background(), gw, "CHAT", attempt)
				require.NoError(t, err, "call %d", i)
				assert.Equal(t, "second", got, "call %d", i)
			}
			assert.Equal(t, int64(1), adv.hits.Load(), "the 503's spent budget held the source back")
		})
	}
}

// An SDK's error without the rate-limit headers changes nothing: the
// source is asked again after a plain 503.
func TestSDKErrorsWithoutRateLimitHeadersLeaveTheBudgetAlone(t *testing.T) {
	up := testutil.NewUpstream(t)
	up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	adv := newAdvertiser(t, up, headers())
	backup := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "first,second",
		"CHAT__FIRST__BASE_URL":   adv.URL,
		"CHAT__FIRST__PRIORITY":   "0",
		"CHAT__SECOND__BASE_URL":  backup.URL,
		"CHAT__SECOND__PRIORITY":  "1",
		"CHAT__FAILURE_THRESHOLD": "5",
		"CHAT__POLL_INTERVAL_S":   "0.01",
	})
	attempt := sdkHeadersChat(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		got, err := pgw.Call(ctx, gw, "CHAT", attempt)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, "second", got, "call %d", i)
	}
	assert.Equal(t, int64(3), adv.hits.Load(), "nothing held the first source back")
}
