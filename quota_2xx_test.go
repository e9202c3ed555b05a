package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
)

// quotaScope is a CHAT scope whose primary (of provider, on ws) answers
// first and whose backup, an OpenAI-compatible fake, answers when the
// primary fails. A single failure would not trip the primary's breaker.
func quotaScope(t *testing.T, provider string, ws *wireServer) (*pgw.GatewayClient, *recorder) {
	t.Helper()
	backup := testutil.NewUpstream(t)
	return newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__FAILURE_THRESHOLD": "5",
		"CHAT__PRIMARY__PROVIDER": provider,
		"CHAT__PRIMARY__BASE_URL": ws.URL,
		"CHAT__PRIMARY__API_KEY":  "sk-primary",
		"CHAT__PRIMARY__MODEL":    "m",
		"CHAT__PRIMARY__PRIORITY": "0",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__API_KEY":   "sk-backup",
		"CHAT__BACKUP__PRIORITY":  "1",
	})
}

// requireSpentQuotaClass checks that the primary's attempt was fatal — its
// breaker open at once, the call served by the backup — as a 429
// insufficient_quota is.
func requireSpentQuotaClass(t *testing.T, gw *pgw.GatewayClient, rec *recorder) {
	t.Helper()
	assert.Equal(t, []string{"primary:fatal", "backup:success"}, rec.Outcomes())
	snap, err := gw.Snapshot(context.Background(), "CHAT", "primary")
	require.NoError(t, err)
	assert.Equal(t, pgw.StateOpen, snap.State, "a spent quota opens the breaker at once, as a 429 insufficient_quota does")
}

func jsonReply(status int, body string) wireReply {
	return wireReply{status: status, ctype: "application/json", body: body}
}

// The error objects that say an OpenAI account's quota is spent, by their
// code alone (the message does not say it).
var oaQuotaErrors = map[string]string{
	"insufficient_quota":         `{"message":"no credit left on this account","type":"requests","code":"insufficient_quota"}`,
	"billing_hard_limit_reached": `{"message":"billing limit","type":"invalid_request_error","code":"billing_hard_limit_reached"}`,
}

// A spent quota reported in a 200 JSON answer or in an error event of a
// stream, through the governed http client, is classified as the same error
// sent as a 429 is: fatal, the breaker open at once, the call failed over.
func TestHTTPClientSpentQuotaInA2xxAnswerIsFatalAsA429(t *testing.T) {
	for code, obj := range oaQuotaErrors {
		for name, c := range map[string]struct {
			reply  wireReply
			stream bool
		}{
			"json":  {jsonReply(200, `{"error":`+obj+`}`), false},
			"event": {sseReply("data: {\"error\":" + obj + "}\n\n"), true},
		} {
			t.Run(code+"/"+name, func(t *testing.T) {
				ws := newWireServer(t, c.reply)
				gw, rec := quotaScope(t, "openai", ws)
				resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(c.stream))
				require.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Contains(t, readBody(t, resp), "Hello")
				requireSpentQuotaClass(t, gw, rec)
				var he *pgw.HTTPError
				require.ErrorAs(t, rec.Attempts()[0].Err, &he)
			})
		}
	}
}

// The same through the HTTP client's 429 path, for every code: the
// reference the 2xx answers are held to.
func TestHTTPClientSpentQuotaAs429IsFatal(t *testing.T) {
	for code, obj := range oaQuotaErrors {
		t.Run(code, func(t *testing.T) {
			ws := newWireServer(t, jsonReply(429, `{"error":`+obj+`}`))
			gw, rec := quotaScope(t, "openai", ws)
			readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false)))
			requireSpentQuotaClass(t, gw, rec)
		})
	}
}

// An Anthropic billing error in a stream's error event, through the
// governed http client, is fatal as the same error sent with its status
// (402) is.
func TestHTTPClientAnthropicBillingErrorEventIsFatalAsA402(t *testing.T) {
	for name, reply := range map[string]wireReply{
		"402":                          jsonReply(402, `{"type":"error","error":{"type":"billing_error","message":"add credit"}}`),
		"billing_error event":          sseReply("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":\"add credit\"}}\n\n"),
		"400 credit_balance_too_low":   jsonReply(400, `{"type":"error","error":{"type":"credit_balance_too_low","message":"add credit"}}`),
		"credit_balance_too_low event": sseReply("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"credit_balance_too_low\",\"message\":\"add credit\"}}\n\n"),
	} {
		t.Run(name, func(t *testing.T) {
			ws := newWireServer(t, reply)
			gw, rec := quotaScope(t, "anthropic", ws)
			// The backup is OpenAI-compatible: the SDK's path is the same
			// on both for this test, which only looks at the classes.
			resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(true))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			readBody(t, resp)
			requireSpentQuotaClass(t, gw, rec)
		})
	}
}

// A spent quota in an OpenAI-compatible source's 200 answer or stream, on
// pgw's own transport, is fatal as the same error sent as a 429 is; the
// attempt's error is the documented *openai.UpstreamError, which says so.
func TestChatSpentQuotaInA2xxAnswerIsFatalAsA429(t *testing.T) {
	for code, obj := range oaQuotaErrors {
		for name, c := range map[string]struct {
			reply  wireReply
			stream bool
		}{
			"json/Chat":        {jsonReply(200, `{"error":`+obj+`}`), false},
			"event/Chat":       {sseReply("data: {\"error\":" + obj + "}\n\n"), false},
			"event/ChatStream": {sseReply("data: {\"error\":" + obj + "}\n\n"), true},
			"json/ChatStream":  {jsonReply(200, `{"error":`+obj+`}`), true},
			"429/Chat":         {jsonReply(429, `{"error":`+obj+`}`), false},
		} {
			t.Run(code+"/"+name, func(t *testing.T) {
				ws := newWireServer(t, c.reply)
				gw, rec := quotaScope(t, "openai", ws)
				chat(t, gw, c.stream)
				requireSpentQuotaClass(t, gw, rec)
				if strings.HasPrefix(name, "429") {
					return
				}
				var ue *openai.UpstreamError
				require.ErrorAs(t, rec.Attempts()[0].Err, &ue)
				assert.True(t, ue.InsufficientQuota())
			})
		}
	}
}

// An Anthropic stream's error event that says the credit is spent is fatal
// on pgw's own transport, as the same error sent as its status (402) is.
func TestChatAnthropicBillingErrorEventIsFatalAsA402(t *testing.T) {
	for name, reply := range map[string]wireReply{
		"402 reference":                jsonReply(402, `{"type":"error","error":{"type":"billing_error","message":"add credit"}}`),
		"billing_error event":          sseReply("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":\"add credit\"}}\n\n"),
		"400 credit_balance_too_low":   jsonReply(400, `{"type":"error","error":{"type":"credit_balance_too_low","message":"add credit"}}`),
		"credit_balance_too_low event": sseReply("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"credit_balance_too_low\",\"message\":\"add credit\"}}\n\n"),
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				ws := newWireServer(t, reply)
				gw, rec := quotaScope(t, "anthropic", ws)
				chat(t, gw, stream)
				requireSpentQuotaClass(t, gw, rec)
				var he *pgw.HTTPError
				require.ErrorAs(t, rec.Attempts()[0].Err, &he)
			})
		}
	}
}

// chat makes one chat call through Chat or ChatStream and requires the
// backup's answer.
func chat(t *testing.T, gw *pgw.GatewayClient, stream bool) {
	t.Helper()
	ctx := context.Background()
	if !stream {
		resp, err := gw.Chat(ctx, hello())
		require.NoError(t, err)
		assert.Equal(t, testutil.DefaultAnswer, resp.Content)
		return
	}
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	defer st.Close()
	var text strings.Builder
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		text.WriteString(ch.Delta)
	}
	assert.Equal(t, testutil.DefaultAnswer, text.String())
}
