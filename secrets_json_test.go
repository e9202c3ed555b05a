package pgw_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An upstream that refuses the request with a JSON body echoing a numeric
// BASE_URL credential, as a number and inside a string: the body the SDK
// gets is still JSON, and shows the credential nowhere — the upstream's own
// answer (a 400: the request is at fault) as well as pgw's verdict (a 401:
// the source is).
func TestHTTPClientErrorBodyWithANumericCredentialStaysJSON(t *testing.T) {
	const account = "12345678"
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			a := r.URL.Query().Get("account")
			fmt.Fprintf(w, `{"error":{"message":"account %s is not allowed","type":"invalid_request_error","code":"no_access","account":%s,"ids":[1,%s]}}`, a, a, a)
		}))
		t.Cleanup(up.Close)
		gw, _ := newGateway(t, map[string]string{
			"PGW_SCOPES":         "CHAT",
			"CHAT__SOURCES":      "a",
			"CHAT__A__BASE_URL":  up.URL + "/v1?account=" + account,
			"CHAT__A__API_KEY":   "sk-live-0123456789",
			"CHAT__MAX_ATTEMPTS": "1",
		})
		resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))
		body := readBody(t, resp)
		assert.NotContains(t, body, account, status)
		var v struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
				Account any    `json:"account"`
				IDs     []any  `json:"ids"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &v), "the SDK parses the error body: %s", body)
		assert.Contains(t, v.Error.Message, "account [redacted] is not allowed", status)
		if status == http.StatusBadRequest {
			require.Equal(t, status, resp.StatusCode, "the upstream's own answer")
			assert.Equal(t, "no_access", v.Error.Code)
			assert.Equal(t, "[redacted]", v.Error.Account)
			assert.Equal(t, []any{1.0, "[redacted]"}, v.Error.IDs)
		}
	}
}
