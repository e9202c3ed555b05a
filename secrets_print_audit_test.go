package pgw_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

const auditSecPrintMarker = "PRNsecret8Wd"

// auditSecPrintIt is a two-item iterator for CallStream.
type auditSecPrintIt struct{ n int }

func (it *auditSecPrintIt) Next() bool      { it.n++; return it.n <= 2 }
func (it *auditSecPrintIt) Current() string { return "item" }
func (it *auditSecPrintIt) Err() error      { return nil }
func (it *auditSecPrintIt) Close() error    { return nil }

// requireNoPrintedMarker fails when the marker shows in v printed with any
// verb, or logged as an attribute (slog prints a struct with %+v).
func requireNoPrintedMarker(t *testing.T, what string, v any) {
	t.Helper()
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		outs = append(outs, fmt.Sprintf(verb, v))
	}
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "v", v)
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("x", "v", v)
	outs = append(outs, sb.String())
	for _, o := range outs {
		require.NotContains(t, o, auditSecPrintMarker, "%s printed", what)
	}
}

// TestNoSecretInAPrintedGatewayOrStream: what pgw hands back — the
// *GatewayClient, a chat *Stream, a CallStream *ItemStream — may end up in
// a debug print or a log attribute. fmt opens a pointer to a struct one
// level deep, unexported fields included, so none of them may hold a
// source's API key or BASE_URL query in the clear at that level.
func TestNoSecretInAPrintedGatewayOrStream(t *testing.T) {
	up := testutil.NewUpstream(t)
	s, err := config.FromMap(map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "a",
		"CHAT__A__BASE_URL": up.URL + "?api-version=2024-10-21&sig=" + auditSecPrintMarker,
		"CHAT__A__API_KEY":  "sk-" + auditSecPrintMarker,
	})
	require.NoError(t, err)
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	requireNoPrintedMarker(t, "the gateway", gw)
	requireNoPrintedMarker(t, "the gateway, nested", struct {
		gw *pgw.GatewayClient
		GW *pgw.GatewayClient
	}{gw, gw})

	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	requireNoPrintedMarker(t, "a chat stream", st)
	require.NoError(t, st.Close())

	var seen pgw.Source
	is, err := pgw.CallStream(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (pgw.Streamer[string], error) {
		seen = src
		return pgw.FromIterator[string](&auditSecPrintIt{}), nil
	})
	require.NoError(t, err)
	require.Equal(t, "sk-"+auditSecPrintMarker, seen.APIKey.Reveal(), "the Call function gets the real key")
	requireNoPrintedMarker(t, "the source a Call function gets", seen)
	requireNoPrintedMarker(t, "an item stream", is)
	requireNoPrintedMarker(t, "an item stream, nested", struct{ s *pgw.ItemStream[string] }{is})
	_, err = is.Recv()
	require.NoError(t, err)
	requireNoPrintedMarker(t, "an item stream under way", is)
	require.NoError(t, is.Close())
}
