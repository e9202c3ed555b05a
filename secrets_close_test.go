package pgw_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// closeFailure is what an SDK's stream's Close may say: the source's key,
// a value of its BASE_URL's query and a proxy's key it echoed.
func closeFailure(src pgw.Source) error {
	return fmt.Errorf("stream close: key %s at ?token=%s; Authorization: Bearer %s", src.APIKey.Reveal(), echoToken, proxyKey)
}

// closingItems is an SDK's stream of one item whose Close fails with err.
type closingItems struct {
	sent bool
	err  error
}

func (s *closingItems) Recv() (string, error) {
	if s.sent {
		return "", fmt.Errorf("unreachable: the test closes after one item")
	}
	s.sent = true
	return "Hello", nil
}

func (s *closingItems) Close() error { return s.err }

// The Close error of an SDK's stream — a plain error, and a *pgw.HTTPError
// the caller built — reaches the caller of CallStream's Close without a
// credential, what it said kept.
func TestCallStreamCloseErrorShowsNoCredential(t *testing.T) {
	kinds := map[string]func(src pgw.Source) error{
		"text":      closeFailure,
		"HTTPError": func(src pgw.Source) error { return callerHTTPError(src, http.StatusBadGateway) },
	}
	for name, failure := range kinds {
		t.Run(name, func(t *testing.T) {
			gw, _, logs := sdkGateway(t, nil)
			st, err := pgw.CallStream(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (pgw.Streamer[string], error) {
				return &closingItems{err: failure(src)}, nil
			})
			require.NoError(t, err)
			it, err := st.Recv()
			require.NoError(t, err)
			require.Equal(t, "Hello", it)
			cerr := st.Close()
			require.Error(t, cerr)
			requireNoSecretIn(t, "Close()", cerr.Error())
			requireNoSecretIn(t, "%+v", fmt.Sprintf("%+v", cerr))
			assert.Contains(t, cerr.Error(), "Authorization: Bearer [redacted]")
			requireNoSecretIn(t, "logs", logs.String())
		})
	}
}

// closingChat is a chat transport whose stream sends one chunk and fails
// its Close.
type closingChat struct{}

func (closingChat) ChatStream(_ context.Context, src pgw.Source, _ pgw.ChatRequest) (pgw.ChatStream, error) {
	return &closingChatStream{err: closeFailure(src)}, nil
}

type closingChatStream struct{ err error }

func (s *closingChatStream) Recv() (pgw.ChatChunk, error) { return pgw.ChatChunk{Delta: "Hello"}, nil }
func (s *closingChatStream) Close() error                 { return s.err }

// A chat stream of a custom transport whose Close fails: the error the
// caller's Close gets shows no credential.
func TestChatStreamCloseErrorShowsNoCredential(t *testing.T) {
	gw, _, _ := sdkGateway(t, nil, pgw.WithChatTransport(closingChat{}))
	st, err := gw.ChatStream(context.Background(), hello())
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	cerr := st.Close()
	require.Error(t, cerr)
	requireNoSecretIn(t, "Close()", cerr.Error())
	assert.Contains(t, cerr.Error(), "stream close")
}

// An attempt that lost a hedge race and then panicked with a value that
// shows credentials: the warning pgw logs of the dropped panic shows none
// of them.
func TestAHedgeLosersPanicIsLoggedWithoutCredentials(t *testing.T) {
	logs := &syncBuffer{}
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "RERANK",
		"RERANK__SOURCES":        "slow,fast",
		"RERANK__HEDGE_AFTER_S":  "0.01",
		"RERANK__BALANCE":        "weighted",
		"RERANK__SLOW__PRIORITY": "0",
		"RERANK__FAST__PRIORITY": "1",
		"RERANK__SLOW__API_KEY":  echoKey,
		"RERANK__SLOW__BASE_URL": "http://127.0.0.1:1/v1?token=" + echoToken,
	}, pgw.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	v, err := pgw.Call(context.Background(), gw, "RERANK", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "slow" {
			<-ctx.Done()
			panic(closeFailure(src))
		}
		return "ranked by " + src.Name, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, "ranked by fast", v)
	require.NoError(t, gw.Close(), "Close waits for the loser")
	out := logs.String()
	require.Contains(t, out, "lost a hedge race panicked")
	requireNoSecretIn(t, "logs", out)
	assert.Contains(t, out, "stream close")
}
