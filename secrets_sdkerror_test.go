package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// The credentials an SDK's failed request shows besides the source's own
// (echoKey, echoToken): a key the SDK was given and sent, a query value it
// added to the URL, and a key a proxy on the way added, which only the
// upstream's echo of its headers shows.
const (
	sdkKey      = "sk-sdk-given-55555555"
	sdkQuery    = "sig-4444444444"
	proxyKey    = "px-proxy-key-33333333"
	upstreamMsg = "no access to this model"
)

// everySecret is what no text pgw hands back may show.
var everySecret = []string{echoKey, echoToken, sdkKey, sdkQuery, proxyKey}

// openAIShapedError has the shape of openai-go's API error as it was before
// that SDK made its text safe: status fields, the request and the answer,
// the body through a value method RawJSON, and a text of the request's
// method and URL, the status and the raw body.
type openAIShapedError struct {
	StatusCode int
	Request    *http.Request
	Response   *http.Response
	raw        string
}

func (e openAIShapedError) RawJSON() string { return e.raw }
func (e *openAIShapedError) Error() string {
	return fmt.Sprintf("%s %q: %d %s %s", e.Request.Method, e.Request.URL, e.StatusCode, http.StatusText(e.StatusCode), e.raw)
}

// anthropicShapedError has the shape of anthropic-sdk-go's API error: the
// same fields and a request id, its text the method, URL, status, request
// id and raw body.
type anthropicShapedError struct {
	StatusCode int
	Request    *http.Request
	Response   *http.Response
	RequestID  string
	raw        string
}

func (e anthropicShapedError) RawJSON() string { return e.raw }
func (e *anthropicShapedError) Error() string {
	return fmt.Sprintf("%s %q: %d %s (Request-ID: %s) %s", e.Request.Method, e.Request.URL, e.StatusCode,
		http.StatusText(e.StatusCode), e.RequestID, e.raw)
}

// sdkFailure is the error an SDK of kind ("openai" or "anthropic") returns
// for a request to src answered with status: the request went to the
// source's BASE_URL (its query kept) with sdkQuery added, carrying sdkKey;
// the upstream's body echoes the key, the source's, the URL and the
// proxy's key.
func sdkFailure(t *testing.T, kind string, src pgw.Source, status int, header http.Header) error {
	t.Helper()
	u, err := url.Parse(src.BaseURL)
	require.NoError(t, err)
	u.Path = strings.TrimRight(u.Path, "/") + "/chat/completions"
	u.RawQuery += "&sig=" + sdkQuery
	req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}
	if kind == "anthropic" {
		req.Header.Set("X-Api-Key", sdkKey)
	} else {
		req.Header.Set("Authorization", "Bearer "+sdkKey)
	}
	if header == nil {
		header = http.Header{}
	}
	resp := &http.Response{StatusCode: status, Header: header, Request: req}
	body := fmt.Sprintf(`{"error":{"message":"%s: key %s (source key %s) at %s; headers: Authorization: Bearer %s, x-api-key: %s","type":"permission_error"}}`,
		upstreamMsg, sdkKey, src.APIKey.Reveal(), u, sdkKey, proxyKey)
	if kind == "anthropic" {
		return &anthropicShapedError{StatusCode: status, Request: req, Response: resp, RequestID: "req_1", raw: body}
	}
	return &openAIShapedError{StatusCode: status, Request: req, Response: resp, raw: body}
}

// requireSDKErrorReached checks that errors.As still reaches the SDK's own
// error value in err, unredacted: a caller who digs it out chose to.
func requireSDKErrorReached(t *testing.T, kind string, err error) {
	t.Helper()
	var raw string
	if kind == "anthropic" {
		var ae *anthropicShapedError
		require.ErrorAs(t, err, &ae)
		raw = ae.Error()
	} else {
		var oe *openAIShapedError
		require.ErrorAs(t, err, &oe)
		raw = oe.Error()
	}
	assert.Contains(t, raw, sdkKey, "the SDK's own value is unchanged")
}

// requireNoSecretIn checks that none of everySecret shows in text, which
// still tells what failed.
func requireNoSecretIn(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range everySecret {
		assert.NotContains(t, text, s, what)
	}
}

// requireCleanRecords checks the attempts' and calls' errors the observer
// got, and the logs.
func requireCleanRecords(t *testing.T, rec *recorder, logs *syncBuffer) {
	t.Helper()
	atts := rec.Attempts()
	require.NotEmpty(t, atts)
	for _, a := range atts {
		if a.Err != nil {
			requireNoSecretIn(t, "attempt record", a.Err.Error())
		}
	}
	for _, c := range rec.Calls() {
		if c.Err != nil {
			requireNoSecretIn(t, "call record", c.Err.Error())
		}
	}
	requireNoSecretIn(t, "logs", logs.String())
}

var sdkKinds = []string{"openai", "anthropic"}

// sdkGateway is a CHAT scope of one source whose key is echoKey and whose
// BASE_URL's query holds echoToken, one attempt per call unless kv (more
// keys and values) says otherwise, logging at Debug into the buffer it
// returns.
func sdkGateway(t *testing.T, kv []string, opts ...pgw.Option) (*pgw.GatewayClient, *recorder, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "a",
		"CHAT__A__BASE_URL":  "http://127.0.0.1:1/v1?token=" + echoToken,
		"CHAT__A__API_KEY":   echoKey,
		"CHAT__MAX_ATTEMPTS": "1",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	gw, rec := newGateway(t, env, append([]pgw.Option{pgw.WithLogger(l)}, opts...)...)
	return gw, rec, logs
}

// An SDK's error returned from a Call function, its text showing the
// request's URL and the upstream's echo of the credentials: the error Call
// returns, its %+v, the attempts' and the call's records and the logs show
// none of them, yet keep the method, the path, the status and the
// upstream's message; errors.As still reaches the SDK's own error.
func TestCallReturnsAnSDKErrorWithoutCredentials(t *testing.T) {
	for _, kind := range sdkKinds {
		t.Run(kind, func(t *testing.T) {
			gw, rec, logs := sdkGateway(t, nil)
			_, err := pgw.Call(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
				return "", pgw.Usage{}, sdkFailure(t, kind, src, http.StatusBadRequest, nil)
			})
			require.Error(t, err)
			requireNoSecretIn(t, "err.Error()", err.Error())
			requireNoSecretIn(t, "%+v", fmt.Sprintf("%+v", err))
			for _, kept := range []string{"POST", "/v1/chat/completions", "400 Bad Request", upstreamMsg} {
				assert.Contains(t, err.Error(), kept)
			}
			assert.Contains(t, err.Error(), "Authorization: Bearer [redacted]")
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, http.StatusBadRequest, he.StatusCode)
			requireNoSecretIn(t, "HTTPError.Message", he.Message)
			assert.Contains(t, he.Message, upstreamMsg)
			requireSDKErrorReached(t, kind, err)
			requireCleanRecords(t, rec, logs)
		})
	}
}

// The wrappers that carry a call's last attempt error — CircuitOpenError
// (a 401 opened the breaker of the only source), GatewayUnavailableError
// (the attempts ran out on 500s), AllSourcesExhausted (a 429's Retry-After
// holds the only source off) — show its text redacted.
func TestTheLastAttemptWrappersShowAnSDKErrorWithoutCredentials(t *testing.T) {
	cases := []struct {
		name   string
		status int
		header http.Header
		kv     []string
		check  func(t *testing.T, err error) error // returns the wrapper's Last
	}{
		{"circuit open", http.StatusUnauthorized, nil, []string{"CHAT__MAX_ATTEMPTS", "2"}, func(t *testing.T, err error) error {
			var coe *pgw.CircuitOpenError
			require.ErrorAs(t, err, &coe)
			return coe.Last
		}},
		{"gateway unavailable", http.StatusInternalServerError, nil, []string{"CHAT__MAX_ATTEMPTS", "2"}, func(t *testing.T, err error) error {
			var gue *pgw.GatewayUnavailableError
			require.ErrorAs(t, err, &gue)
			return gue.Last
		}},
		{"all sources exhausted", http.StatusTooManyRequests, http.Header{"Retry-After": {"60"}},
			[]string{"CHAT__MAX_ATTEMPTS", "2", "CHAT__QUOTA_FULL", "fail_fast"}, func(t *testing.T, err error) error {
				var ase *pgw.AllSourcesExhausted
				require.ErrorAs(t, err, &ase)
				return ase.Last
			}},
	}
	for _, c := range cases {
		for _, kind := range sdkKinds {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				gw, rec, logs := sdkGateway(t, c.kv)
				_, err := pgw.Call(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
					return "", pgw.Usage{}, sdkFailure(t, kind, src, c.status, c.header)
				})
				require.Error(t, err)
				last := c.check(t, err)
				require.Error(t, last, "the wrapper carries the last attempt's error")
				requireNoSecretIn(t, "wrapper's Error()", err.Error())
				requireNoSecretIn(t, "Last.Error()", last.Error())
				assert.Contains(t, err.Error(), upstreamMsg)
				requireSDKErrorReached(t, kind, last)
				requireCleanRecords(t, rec, logs)
			})
		}
	}
}

// requireRedactedSDKError checks err, the error a governed call returned
// for an SDK's failure: its text shows no secret and keeps the upstream's
// message, errors.As still reaches the SDK's own error, and the records and
// logs are clean.
func requireRedactedSDKError(t *testing.T, kind string, err error, rec *recorder, logs *syncBuffer) {
	t.Helper()
	requireNoSecretIn(t, "err.Error()", err.Error())
	assert.Contains(t, err.Error(), upstreamMsg)
	requireSDKErrorReached(t, kind, err)
	requireCleanRecords(t, rec, logs)
}

// sdkEmbedder is an embedding transport built on an SDK: a batch holding
// "bad" fails with the SDK's error.
type sdkEmbedder struct {
	t    *testing.T
	kind string
}

func (e sdkEmbedder) Embed(_ context.Context, src pgw.Source, req pgw.EmbedRequest) (pgw.EmbedResponse, error) {
	if req.Inputs[0] == "bad" {
		return pgw.EmbedResponse{}, sdkFailure(e.t, e.kind, src, http.StatusBadRequest, nil)
	}
	return pgw.EmbedResponse{Vectors: [][]float32{{1}}}, nil
}

// A split embedding call one of whose sub-batches failed on an SDK's
// error: the *BatchError and its failure show no credential.
func TestABatchErrorShowsAnSDKErrorWithoutCredentials(t *testing.T) {
	for _, kind := range sdkKinds {
		t.Run(kind, func(t *testing.T) {
			logs := &syncBuffer{}
			gw, rec := newGateway(t, map[string]string{
				"PGW_SCOPES":               "EMBEDDING",
				"EMBEDDING__SOURCES":       "a",
				"EMBEDDING__A__BASE_URL":   "http://127.0.0.1:1/v1?token=" + echoToken,
				"EMBEDDING__A__API_KEY":    echoKey,
				"EMBEDDING__A__BATCH_SIZE": "1",
			}, pgw.WithEmbedTransport(sdkEmbedder{t: t, kind: kind}),
				pgw.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			_, err := gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{"good", "bad"}})
			var be *pgw.BatchError
			require.ErrorAs(t, err, &be)
			require.Len(t, be.Failed, 1)
			requireNoSecretIn(t, "BatchError", err.Error())
			requireNoSecretIn(t, "BatchFailure.Err", be.Failed[0].Err.Error())
			assert.Contains(t, err.Error(), upstreamMsg)
			requireSDKErrorReached(t, kind, be.Failed[0].Err)
			requireCleanRecords(t, rec, logs)
		})
	}
}

// sdkItems is an SDK's stream: its items, then err.
type sdkItems struct {
	items []string
	err   error
}

func (s *sdkItems) Recv() (string, error) {
	if len(s.items) > 0 {
		it := s.items[0]
		s.items = s.items[1:]
		return it, nil
	}
	return "", s.err
}

func (s *sdkItems) Close() error { return nil }

// A CallStream whose SDK stream fails with the SDK's error, before its
// first item (within the read-ahead, an attempt's failure) and after it
// (the stream's cut): neither error, nor the records and logs, show a
// credential.
func TestCallStreamReturnsAnSDKErrorWithoutCredentials(t *testing.T) {
	for _, kind := range sdkKinds {
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/after first item %v", kind, after), func(t *testing.T) {
				gw, rec, logs := sdkGateway(t, nil)
				st, err := pgw.CallStream(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (pgw.Streamer[string], error) {
					s := &sdkItems{err: sdkFailure(t, kind, src, http.StatusInternalServerError, nil)}
					if after {
						s.items = []string{"Hello"}
					}
					return s, nil
				})
				if after {
					require.NoError(t, err)
					defer st.Close()
					it, rerr := st.Recv()
					require.NoError(t, rerr)
					require.Equal(t, "Hello", it)
					_, err = st.Recv()
					require.Error(t, err)
					require.NotErrorIs(t, err, io.EOF)
				}
				require.Error(t, err)
				requireRedactedSDKError(t, kind, err, rec, logs)
			})
		}
	}
}

// sdkChat is a chat transport built on an SDK: its stream sends one chunk,
// then fails with the SDK's error.
type sdkChat struct {
	t    *testing.T
	kind string
}

func (c sdkChat) ChatStream(_ context.Context, src pgw.Source, _ pgw.ChatRequest) (pgw.ChatStream, error) {
	return &sdkChatStream{err: sdkFailure(c.t, c.kind, src, http.StatusInternalServerError, nil)}, nil
}

type sdkChatStream struct {
	sent bool
	err  error
}

func (s *sdkChatStream) Recv() (pgw.ChatChunk, error) {
	if !s.sent {
		s.sent = true
		return pgw.ChatChunk{Delta: "Hello"}, nil
	}
	return pgw.ChatChunk{}, s.err
}

func (s *sdkChatStream) Close() error { return nil }

// A chat stream of a custom transport built on an SDK, cut by the SDK's
// error after its first chunk: the error Recv returns shows no credential.
func TestAChatStreamCutByAnSDKErrorShowsNoCredential(t *testing.T) {
	for _, kind := range sdkKinds {
		t.Run(kind, func(t *testing.T) {
			gw, rec, logs := sdkGateway(t, nil, pgw.WithChatTransport(sdkChat{t: t, kind: kind}))
			st, err := gw.ChatStream(context.Background(), hello())
			require.NoError(t, err)
			defer st.Close()
			ch, err := st.Recv()
			require.NoError(t, err)
			require.Equal(t, "Hello", ch.Delta)
			_, err = st.Recv()
			require.Error(t, err)
			requireRedactedSDKError(t, kind, err, rec, logs)
		})
	}
}

// An SDK's error that carries no status — a transport error naming the
// request's URL, a stream's error event — shows no credential either.
func TestAnSDKErrorWithoutStatusShowsNoCredential(t *testing.T) {
	gw, rec, logs := sdkGateway(t, nil)
	var sent *url.Error
	_, err := pgw.Call(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
		sent = &url.Error{Op: "Post", URL: src.BaseURL + "&sig=" + sdkQuery, Err: errors.New("connection refused")}
		return "", pgw.Usage{}, fmt.Errorf("openai: %w (key %s, Authorization: Bearer %s)", sent, src.APIKey.Reveal(), proxyKey)
	})
	require.Error(t, err)
	requireNoSecretIn(t, "err.Error()", err.Error())
	assert.Contains(t, err.Error(), "connection refused")
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	assert.Same(t, sent, ue, "errors.As reaches the SDK's own error")
	requireCleanRecords(t, rec, logs)
}

// A hedged call whose hedge leg fails on an SDK's error (a 400, which ends
// the call) while the first leg runs: the error the call returns shows no
// credential.
func TestAHedgedCallReturnsAnSDKErrorWithoutCredentials(t *testing.T) {
	gw, rec, logs := sdkGateway(t, []string{
		"CHAT__SOURCES", "a,b",
		"CHAT__MAX_ATTEMPTS", "2",
		"CHAT__HEDGE_AFTER_S", "0.001",
		"CHAT__B__PRIORITY", "1",
		"CHAT__B__BASE_URL", "http://127.0.0.1:1/v1?token=" + echoToken,
		"CHAT__B__API_KEY", echoKey,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound, should the hedge never start
	defer cancel()
	_, err := pgw.Call(ctx, gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "b" {
			return "", pgw.Usage{}, sdkFailure(t, "anthropic", src, http.StatusBadRequest, nil)
		}
		<-ctx.Done() // the hedge leg's 400 ends the call, and this leg with it
		return "", pgw.Usage{}, ctx.Err()
	})
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the hedge started")
	requireRedactedSDKError(t, "anthropic", err, rec, logs)
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode, "the hedge leg's error ended the call")
}
