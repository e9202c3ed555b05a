package pgw_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/provider"
)

// largeErrorBody is an error body of content type ct of more than
// provider.MaxErrorBody bytes, padded with whitespace (which the error's
// message folds away) and showing secret from byte at.
func largeErrorBody(ct, secret string, at int) string {
	head, tail := "", ""
	if ct == "application/json" {
		head, tail = `{"error":{"message":"`, `","type":"invalid_request_error"}}`
	}
	return head + strings.Repeat(" ", at-len(head)) + secret + strings.Repeat(" ", 2*provider.MaxErrorBody) + tail
}

// An upstream refuses with a body larger than pgw reads of it, echoing the
// source's key at its start, in its middle, across the cut at
// provider.MaxErrorBody or past it; as JSON, HTML or plain text, chunked,
// with a Content-Length or gzipped. No part of the key shows in the SDK's
// answer (the upstream's own for a 400, pgw's verdict for a 500), in the
// error of a call through the native transports (any fmt verb, the
// *pgw.HTTPError errors.As finds), in the observer's records or in the
// logs.
func TestALargeErrorBodyShowsNoPartOfTheKey(t *testing.T) {
	const key = echoKey
	half := len(key) / 2
	positions := map[string]int{
		"start": 0, "middle": provider.MaxErrorBody / 2,
		"across the cut": provider.MaxErrorBody - half, "past the cut": provider.MaxErrorBody + 10,
	}
	for _, ct := range []string{"application/json", "text/html", "text/plain"} {
		for where, at := range positions {
			if ct == "application/json" && at == 0 {
				at = len(`{"error":{"message":"`)
			}
			for _, enc := range []string{"chunked", "length", "gzip"} {
				for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError} {
					name := fmt.Sprintf("%s %s %s %d", ct, where, enc, status)
					body := largeErrorBody(ct, key, at)
					up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", ct)
						var out io.Writer = w
						switch enc {
						case "length":
							w.Header().Set("Content-Length", strconv.Itoa(len(body)))
						case "gzip":
							w.Header().Set("Content-Encoding", "gzip")
							zw := gzip.NewWriter(w)
							defer zw.Close()
							out = zw
						}
						w.WriteHeader(status)
						for i := 0; i < len(body); i += 4 << 10 {
							_, _ = io.WriteString(out, body[i:min(i+4<<10, len(body))])
						}
					}))
					for _, p := range []string{"openai", "anthropic"} {
						gw, rec, logs := echoedGateway(t, up.URL, "CHAT__A__PROVIDER", p, "CHAT__A__MODEL", "m")
						_, err := gw.Chat(context.Background(), hello())
						require.Error(t, err, name)
						var he *pgw.HTTPError
						require.True(t, errors.As(err, &he), "%s %s: %v", name, p, err)
						shows := []string{err.Error(), fmt.Sprintf("%+v", err), he.Message, logs.String()}
						if p == "openai" {
							shows = append(shows, readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(false))))
						}
						for _, a := range rec.Attempts() {
							require.Error(t, a.Err, name)
							shows = append(shows, a.Err.Error(), fmt.Sprintf("%+v", a.Err))
						}
						for _, s := range shows {
							require.NotContains(t, s, key[:half], "%s %s", name, p)
						}
					}
					up.Close()
				}
			}
		}
	}
}
