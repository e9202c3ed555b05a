package pgw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// credentialHeaders are every provider's credential headers.
var credentialHeaders = []string{"Authorization", "Api-Key", "X-Api-Key"}

// wantCredential is the one credential header a source of provider sends
// with key, and its value.
func wantCredential(provider, key string) (string, string) {
	switch provider {
	case "azure":
		return "Api-Key", key
	case "anthropic":
		return "X-Api-Key", key
	}
	return "Authorization", "Bearer " + key
}

// requireOnlyCredential checks that h carries provider's credential header
// with key and no other provider's.
func requireOnlyCredential(t *testing.T, h http.Header, provider, key string) {
	t.Helper()
	name, value := wantCredential(provider, key)
	assert.Equal(t, []string{value}, h.Values(name), "%s: its own credential", provider)
	for _, other := range credentialHeaders {
		if other != name {
			assert.Empty(t, h.Values(other), "%s: no %s", provider, other)
		}
	}
	if provider == "anthropic" {
		assert.NotEmpty(t, h.Get("Anthropic-Version"), "anthropic-version is sent")
	}
}

// TestEveryProviderSendsItsOwnCredentialOnEveryFace: PROVIDER selects the
// credential header — Authorization: Bearer for openai, api-key for azure,
// x-api-key with anthropic-version for anthropic — on the typed faces and
// through HTTPClient, where the credentials the SDK set (any provider's)
// are replaced by the source's; BASE_URL's path and query are kept.
func TestEveryProviderSendsItsOwnCredentialOnEveryFace(t *testing.T) {
	const key = "sk-source-key"
	for _, provider := range []string{"openai", "azure", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			up := newWireUpstream(t)
			base := up.URL + "/v1?api-version=2024-10-21"
			env := map[string]string{"PGW_SCOPES": "CHAT,OCR"}
			for _, s := range []string{"CHAT", "OCR"} {
				env[s+"__SOURCES"] = "a"
				env[s+"__A__BASE_URL"] = base
				env[s+"__A__API_KEY"] = key
				env[s+"__A__PROVIDER"] = provider
				env[s+"__A__MODEL"] = "m"
			}
			if provider != "anthropic" { // Anthropic has no embeddings API
				env["PGW_SCOPES"] += ",EMBEDDING"
				env["EMBEDDING__SOURCES"] = "a"
				env["EMBEDDING__A__BASE_URL"] = base
				env["EMBEDDING__A__API_KEY"] = key
				env["EMBEDDING__A__PROVIDER"] = provider
			}
			gw, _ := newGateway(t, env)
			ctx := context.Background()

			_, err := gw.Chat(ctx, hello())
			require.NoError(t, err)
			st, err := gw.ChatStream(ctx, hello())
			require.NoError(t, err)
			for {
				if _, err := st.Recv(); err != nil {
					require.ErrorIs(t, err, io.EOF)
					break
				}
			}
			require.NoError(t, st.Close())
			_, err = gw.OCR(ctx, pgw.OCRRequest{Image: tinyPNG(t)})
			require.NoError(t, err)
			if provider != "anthropic" {
				_, err = gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"x"}})
				require.NoError(t, err)
			}

			// Through HTTPClient, with every provider's credential set by
			// the SDK.
			sdkPath := "chat/completions"
			sdkBody := `{"model":"sdk-model","messages":[{"role":"user","content":"hi"}],"stream":true}`
			if provider == "anthropic" {
				sdkPath = "messages"
				sdkBody = `{"model":"sdk-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":true}`
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, pgw.SDKBaseURL+sdkPath, strings.NewReader(sdkBody))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sdk-placeholder")
			req.Header.Set("Api-Key", "sdk-placeholder")
			req.Header.Set("X-Api-Key", "sdk-placeholder")
			resp, err := gw.HTTPClient("CHAT").Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, http.StatusOK, resp.StatusCode)

			got := up.requests()
			want := 4
			if provider == "anthropic" {
				want = 3
			}
			require.Len(t, got, want+1)
			for i, r := range got {
				requireOnlyCredential(t, r.Header, provider, key)
				assert.Equal(t, "api-version=2024-10-21", r.RawQuery, "request %d (%s): the query is kept", i, r.Path)
				assert.True(t, strings.HasPrefix(r.Path, "/v1/"), "request %d: %s joined onto BASE_URL's path", i, r.Path)
				assert.NotContains(t, r.Path, "api-version", "the query is not part of the path")
			}
		})
	}
}

// TestHTTPClientJoinsTheSDKsPathAndQueryOntoTheSourcesURL: the path of a
// request relative to SDKBaseURL is joined onto BASE_URL's path, and the
// SDK's query is kept beside BASE_URL's.
func TestHTTPClientJoinsTheSDKsPathAndQueryOntoTheSourcesURL(t *testing.T) {
	up := newWireUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":         "CHAT",
		"CHAT__SOURCES":      "az",
		"CHAT__AZ__BASE_URL": up.URL + "/openai/deployments/gpt-4o?api-version=2024-10-21",
		"CHAT__AZ__PROVIDER": "azure",
		"CHAT__AZ__API_KEY":  "k",
	})
	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions?trace=on",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	got := up.requests()
	require.Len(t, got, 1)
	assert.Equal(t, "/openai/deployments/gpt-4o/chat/completions", got[0].Path)
	q, err := url.ParseQuery(got[0].RawQuery)
	require.NoError(t, err)
	assert.Equal(t, url.Values{"api-version": {"2024-10-21"}, "trace": {"on"}}, q)
}

// TestChatRequestFieldsReachTheWire: every modelled ChatRequest field is
// sent under OpenAI's own name to openai and azure sources, and translated
// for anthropic ones (stop → stop_sequences, user → metadata.user_id,
// ParallelToolCalls false → disable_parallel_tool_use, a function tool
// choice → {"type":"tool"}); Extra keys are merged into the body as given.
func TestChatRequestFieldsReachTheWire(t *testing.T) {
	no, seed, topP, temp := false, 7, 0.5, 0.3
	req := pgw.ChatRequest{
		Messages:          []pgw.Message{{Role: pgw.RoleSystem, Content: "Be brief."}, {Role: pgw.RoleUser, Content: "Weather in Paris?"}},
		Model:             "m",
		MaxTokens:         99,
		Temperature:       &temp,
		Tools:             []pgw.Tool{pgw.FunctionTool("get_weather", "Current weather", map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}})},
		ToolChoice:        pgw.ToolChoiceFunction{Name: "get_weather"},
		Stop:              []string{"END", "STOP"},
		TopP:              &topP,
		ParallelToolCalls: &no,
		User:              "user-42",
		Extra:             map[string]any{"service_tier": "flex"},
	}
	for _, provider := range []string{"openai", "azure", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			up := newWireUpstream(t)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":        "CHAT",
				"CHAT__SOURCES":     "a",
				"CHAT__A__BASE_URL": up.URL + "/v1",
				"CHAT__A__PROVIDER": provider,
			})
			r := req
			if provider != "anthropic" {
				r.Seed = &seed // the Messages API has no seed
			} else {
				r.TopP = nil // Anthropic takes Temperature or TopP, not both
			}
			_, err := gw.Chat(context.Background(), r)
			require.NoError(t, err)
			got := up.requests()
			require.Len(t, got, 1)
			b := got[0].Body
			assert.Equal(t, "m", b["model"])
			assert.Equal(t, "flex", b["service_tier"], "Extra is merged")
			if provider != "anthropic" {
				assert.Equal(t, 0.5, b["top_p"])
			}
			assert.Equal(t, 0.3, b["temperature"])
			assert.Equal(t, true, b["stream"])
			assert.EqualValues(t, 99, b["max_tokens"])
			if provider == "anthropic" {
				assert.Equal(t, "/v1/messages", got[0].Path)
				assert.Equal(t, []any{"END", "STOP"}, b["stop_sequences"])
				assert.Equal(t, map[string]any{"user_id": "user-42"}, b["metadata"])
				assert.Equal(t, map[string]any{"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}, b["tool_choice"])
				assert.Equal(t, "Be brief.", b["system"])
				tools, _ := b["tools"].([]any)
				require.Len(t, tools, 1)
				tool, _ := tools[0].(map[string]any)
				assert.Equal(t, "get_weather", tool["name"])
				assert.NotNil(t, tool["input_schema"])
				for _, k := range []string{"stop", "user", "parallel_tool_calls", "seed"} {
					assert.NotContains(t, b, k, "OpenAI's name is not sent to Anthropic")
				}
				return
			}
			assert.Equal(t, "/v1/chat/completions", got[0].Path)
			assert.Equal(t, []any{"END", "STOP"}, b["stop"])
			assert.Equal(t, "user-42", b["user"])
			assert.Equal(t, false, b["parallel_tool_calls"])
			assert.EqualValues(t, 7, b["seed"])
			assert.Equal(t, map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, b["tool_choice"])
			tools, _ := b["tools"].([]any)
			require.Len(t, tools, 1)
			assert.Equal(t, map[string]any{"type": "function", "function": map[string]any{
				"name": "get_weather", "description": "Current weather",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
			}}, tools[0])
			msgs, _ := b["messages"].([]any)
			require.Len(t, msgs, 2)
			assert.Equal(t, map[string]any{"role": "system", "content": "Be brief."}, msgs[0])
		})
	}
}

// TestResponseFormatReachesTheWire: a json_schema response format is sent
// as OpenAI's response_format, and served on Anthropic by a forced tool
// named after the schema.
func TestResponseFormatReachesTheWire(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
	req := hello()
	req.Model = "m"
	req.ResponseFormat = &pgw.ResponseFormat{Type: pgw.FormatJSONSchema, JSONSchema: &pgw.JSONSchema{Name: "verdict", Schema: schema}}
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			up := newWireUpstream(t)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "CHAT__A__BASE_URL": up.URL + "/v1", "CHAT__A__PROVIDER": provider,
			})
			_, err := gw.Chat(context.Background(), req)
			require.NoError(t, err)
			got := up.requests()
			require.Len(t, got, 1)
			b := got[0].Body
			if provider == "openai" {
				assert.Equal(t, map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "verdict", "schema": schema}}, b["response_format"])
				return
			}
			assert.NotContains(t, b, "response_format")
			assert.Equal(t, map[string]any{"type": "tool", "name": "verdict"}, b["tool_choice"])
		})
	}
}

const (
	oaToolStream = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,\"total_tokens\":29,\"prompt_tokens_details\":{\"cached_tokens\":8},\"completion_tokens_details\":{\"reasoning_tokens\":4}}}\n\n" +
		"data: [DONE]\n\n"
	antToolStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":8,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// TestChatChunksAndResponseCarryToolCallsFinishReasonUsageAndSource: a
// streamed tool call arrives as ToolCallDelta pieces with the finish reason
// and usage on the chunks; the collected ChatResponse has the assembled
// ToolCalls, FinishReason "tool_calls", the usage with cached tokens, and
// the Source that answered — on both transports.
func TestChatChunksAndResponseCarryToolCallsFinishReasonUsageAndSource(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			up := newWireUpstream(t)
			up.answer("/chat/completions", oaToolStream)
			up.answer("/messages", antToolStream)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "src-1", "CHAT__SRC_1__BASE_URL": up.URL + "/v1",
				"CHAT__SRC_1__PROVIDER": provider, "CHAT__SRC_1__MODEL": "m",
			})
			req := hello()
			req.Tools = []pgw.Tool{pgw.FunctionTool("get_weather", "", nil)}

			r, err := gw.Chat(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, "src-1", r.Source)
			assert.Equal(t, "tool_calls", r.FinishReason)
			require.Len(t, r.ToolCalls, 1)
			tc := r.ToolCalls[0]
			assert.Equal(t, "call_1", tc.ID)
			assert.Equal(t, "function", tc.Type)
			assert.Equal(t, "get_weather", tc.Function.Name)
			assert.JSONEq(t, `{"city":"Paris"}`, tc.Function.Arguments)
			assert.Equal(t, 8, r.Usage.CachedPromptTokens)
			assert.Equal(t, 9, r.Usage.CompletionTokens)
			assert.Positive(t, r.Usage.PromptTokens)
			assert.Equal(t, r.Usage.PromptTokens+r.Usage.CompletionTokens, r.Usage.TotalTokens)
			if provider == "openai" {
				assert.Equal(t, 4, r.Usage.ReasoningTokens)
			}

			st, err := gw.ChatStream(context.Background(), req)
			require.NoError(t, err)
			defer st.Close()
			var args strings.Builder
			var finish string
			var usage *pgw.Usage
			var id, name string
			for {
				ch, err := st.Recv()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				for _, d := range ch.ToolCalls {
					assert.Equal(t, 0, d.Index)
					if d.ID != "" {
						id = d.ID
					}
					if d.Name != "" {
						name = d.Name
					}
					args.WriteString(d.Arguments)
				}
				if ch.FinishReason != "" {
					finish = ch.FinishReason
				}
				if ch.Usage != nil {
					usage = ch.Usage
				}
			}
			assert.Equal(t, "call_1", id)
			assert.Equal(t, "get_weather", name)
			assert.JSONEq(t, `{"city":"Paris"}`, args.String())
			assert.Equal(t, "tool_calls", finish)
			require.NotNil(t, usage, "a chunk carries the usage")
			assert.Equal(t, 9, usage.CompletionTokens)
		})
	}
}

// TestNoCredentialInAnyRenderingOfAFailedCall: a source whose API key and
// whose BASE_URL's query hold secrets, and whose upstream fails: neither
// secret shows in the error of any face (%v, %+v, %#v, slog), in the
// gateway's logs, in the observer's records, nor in the Source printed.
func TestNoCredentialInAnyRenderingOfAFailedCall(t *testing.T) {
	const keySecret, querySecret = "KEYsecret9Z", "QRYsecret4W"
	up := newGuardedUpstream(t)
	up.open.Store(true) // answers 400
	var logs bytes.Buffer
	env := map[string]string{
		"PGW_SCOPES":        "CHAT",
		"CHAT__SOURCES":     "a",
		"CHAT__A__BASE_URL": up.URL + "/v1?api-version=1&sig=" + querySecret,
		"CHAT__A__API_KEY":  keySecret,
		"CHAT__A__MODEL":    "m",
	}
	gw, rec := newGateway(t, env, pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := context.Background()
	var errsSeen []error
	_, err := gw.Chat(ctx, hello())
	require.Error(t, err)
	errsSeen = append(errsSeen, err)
	st, err := gw.ChatStream(ctx, hello())
	require.Error(t, err)
	require.Nil(t, st)
	errsSeen = append(errsSeen, err)
	req, _ := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(`{"messages":[]}`))
	resp, err := gw.HTTPClient("CHAT").Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()

	var he *pgw.HTTPError
	require.ErrorAs(t, errsSeen[0], &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	assert.Equal(t, "CHAT", he.Scope)
	assert.Equal(t, "a", he.Source)
	assert.Equal(t, "/v1/chat/completions", he.Path)

	var outs []string
	render := func(v any) {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			outs = append(outs, fmt.Sprintf(verb, v))
		}
		var sb strings.Builder
		slog.New(slog.NewJSONHandler(&sb, nil)).Info("x", "v", v)
		slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "v", v)
		outs = append(outs, sb.String())
		if b, err := json.Marshal(v); err == nil {
			outs = append(outs, string(b))
		}
	}
	for _, e := range errsSeen {
		render(e)
	}
	for _, a := range rec.Attempts() {
		render(a)
	}
	for _, c := range rec.Calls() {
		render(c)
	}
	s := gw.Scopes()
	render(s)
	outs = append(outs, logs.String(), string(body), fmt.Sprint(resp.Header))
	for i, o := range outs {
		assert.NotContains(t, o, keySecret, "rendering %d", i)
		assert.NotContains(t, o, querySecret, "rendering %d", i)
	}
}

// TestAnUpstreamThatEchoesTheRequestLeaksNoCredential: an upstream whose
// error text echoes the request's URL and credential header (as many 404
// pages and proxies do) has neither the key nor the values of BASE_URL's
// query shown in the error, the logs or the observer's records, on the
// typed faces of every provider and in HTTPClient's verdict; the
// api-version, which is no credential, stays readable, and the error names
// the scope, the source and the request's path.
func TestAnUpstreamThatEchoesTheRequestLeaksNoCredential(t *testing.T) {
	const keySecret, querySecret = "KEYsecret9Z", "QRYsecret4W"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		status := http.StatusNotFound
		if strings.Contains(r.URL.Path, "fail") {
			status = http.StatusBadGateway
		}
		w.WriteHeader(status)
		msg := fmt.Sprintf("no route for %s %s (credentials %q %q)", r.Method, r.URL.RequestURI(),
			r.Header.Get("Authorization")+r.Header.Get("Api-Key")+r.Header.Get("X-Api-Key"), url.QueryEscape(querySecret))
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": msg}})
		_, _ = w.Write(b)
	}))
	t.Cleanup(echo.Close)
	for _, provider := range []string{"openai", "azure", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			var logs bytes.Buffer
			env := map[string]string{"PGW_SCOPES": "CHAT,SDK", "CHAT__SOURCES": "a", "SDK__SOURCES": "a", "SDK__MAX_ATTEMPTS": "1"}
			for _, s := range []string{"CHAT", "SDK"} {
				path := "/v1"
				if s == "SDK" {
					path = "/fail"
				}
				env[s+"__A__BASE_URL"] = echo.URL + path + "?api-version=2024-10-21&sig=" + querySecret
				env[s+"__A__API_KEY"] = keySecret
				env[s+"__A__PROVIDER"] = provider
				env[s+"__A__MODEL"] = "m"
			}
			gw, rec := newGateway(t, env, pgw.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			_, chatErr := gw.Chat(context.Background(), hello())
			var he *pgw.HTTPError
			require.ErrorAs(t, chatErr, &he)
			assert.Equal(t, http.StatusNotFound, he.StatusCode)
			assert.Equal(t, "CHAT", he.Scope)
			assert.Equal(t, "a", he.Source)
			assert.True(t, strings.HasPrefix(he.Path, "/v1/"), "the request's path, without the query: %q", he.Path)
			assert.Contains(t, he.Message, "no route for POST /v1/", "the upstream's text is kept")
			assert.Contains(t, he.Message, "2024-10-21", "the api-version is no credential")

			req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(`{"model":"x"}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := gw.HTTPClient("SDK").Do(req)
			require.NoError(t, err)
			verdict, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, pgw.SDKVerdictStatus, resp.StatusCode, "pgw's own verdict: %s", verdict)

			outs := []string{fmt.Sprintf("%v", chatErr), fmt.Sprintf("%+v", chatErr), fmt.Sprintf("%#v", he), string(verdict), logs.String()}
			for _, a := range rec.Attempts() {
				outs = append(outs, fmt.Sprintf("%+v", a))
			}
			for i, o := range outs {
				assert.NotContains(t, o, keySecret, "rendering %d", i)
				assert.NotContains(t, o, querySecret, "rendering %d: %s", i, o)
			}
		})
	}
}
