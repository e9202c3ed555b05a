package pgw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// An upstream that echoes the request's key and query into its error's
// code or type: the *pgw.HTTPError the call returns, the attempts and the
// logs show neither credential.
func TestErrorTypeAndCodeShowNoEchoedCredential(t *testing.T) {
	for name, format := range map[string]string{
		"code": `{"error":{"message":"bad request","type":"invalid_request_error","code":"key %s for %s"}}`,
		"type": `{"error":{"message":"bad request","type":"key %s for %s"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, format, r.Header.Get("Authorization"), r.URL.RawQuery)
			}))
			t.Cleanup(up.Close)
			gw, rec, logs := echoedGateway(t, up.URL)
			_, err := gw.Chat(context.Background(), hello())
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, http.StatusBadRequest, he.StatusCode)
			assert.Equal(t, "bad request (key Bearer [redacted] for token=[redacted])", he.Message)
			requireNoEchoedCredential(t, err.Error(), rec, logs)
		})
	}
}
