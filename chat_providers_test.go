package pgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// wireServer is an upstream that records each request body and answers with
// the next scripted reply (status, content type, body); past the script it
// repeats the last reply.
type wireServer struct {
	URL string

	mu      sync.Mutex
	bodies  [][]byte
	replies []wireReply
}

type wireReply struct {
	status int
	ctype  string
	body   string
}

func sseReply(body string) wireReply {
	return wireReply{status: 200, ctype: "text/event-stream", body: body}
}

func newWireServer(t *testing.T, replies ...wireReply) *wireServer {
	t.Helper()
	ws := &wireServer{replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ws.mu.Lock()
		ws.bodies = append(ws.bodies, b)
		rep := ws.replies[0]
		if len(ws.replies) > 1 {
			ws.replies = ws.replies[1:]
		}
		ws.mu.Unlock()
		w.Header().Set("Content-Type", rep.ctype)
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(srv.Close)
	ws.URL = srv.URL + "/v1"
	return ws
}

// script replaces the replies still to come.
func (ws *wireServer) script(replies ...wireReply) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.replies = replies
}

func (ws *wireServer) requests() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.bodies)
}

// last decodes the last request's body into v.
func (ws *wireServer) last(t *testing.T, v any) {
	t.Helper()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	require.NotEmpty(t, ws.bodies, "no request reached the server")
	require.NoError(t, json.Unmarshal(ws.bodies[len(ws.bodies)-1], v))
}

var unavailable = wireReply{status: 503, ctype: "application/json", body: `{"error":{"message":"down","type":"server_error"}}`}

// oaEvents is an OpenAI chat stream of the given chunk deltas (JSON
// objects), a finish reason and a usage chunk.
func oaEvents(finish string, deltas ...string) string {
	var b strings.Builder
	for _, d := range deltas {
		fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"total_tokens\":13}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// antEvents is an Anthropic Messages stream of the given content events
// (name, data pairs), ended with stop.
func antEvents(stop string, events ...string) string {
	var b strings.Builder
	ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
	for i := 0; i+1 < len(events); i += 2 {
		ev(events[i], events[i+1])
	}
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":7}}`, stop))
	ev("message_stop", `{"type":"message_stop"}`)
	return b.String()
}

func antToolUse(index int, id, name string, fragments ...string) []string {
	out := []string{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, index, id, name)}
	for _, f := range fragments {
		frag, _ := json.Marshal(f)
		out = append(out, "content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, index, frag))
	}
	return append(out, "content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))
}

func antText(index int, text string) []string {
	t, _ := json.Marshal(text)
	return []string{
		"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, index),
		"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, index, t),
		"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index),
	}
}

// mixedScope is a CHAT scope with an OpenAI-compatible primary "oa" and an
// Anthropic backup "claude".
func mixedScope(t *testing.T, oa, claude *wireServer) *pgw.GatewayClient {
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":               "CHAT",
		"CHAT__SOURCES":            "oa,claude",
		"CHAT__OA__BASE_URL":       oa.URL,
		"CHAT__OA__MODEL":          "gpt-4o-mini",
		"CHAT__CLAUDE__BASE_URL":   claude.URL,
		"CHAT__CLAUDE__MODEL":      "claude-sonnet-4-5",
		"CHAT__CLAUDE__PROVIDER":   "anthropic",
		"CHAT__CLAUDE__PRIORITY":   "1",
		"CHAT__FAILURE_THRESHOLD":  "100",
		"CHAT__CLAUDE__MAX_TOKENS": "300",
	})
	return gw
}

func streamAll(t *testing.T, st *pgw.Stream) pgw.ChatResponse {
	t.Helper()
	defer st.Close()
	var col pgw.Collector
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return col.Response()
		}
		require.NoError(t, err)
		col.Add(ch)
	}
}

// A tool round trip that starts on the Anthropic backup, goes back to the
// OpenAI-compatible primary and over to the backup again keeps the
// conversation whole on each wire: parallel tool calls with their IDs,
// their results (one user turn on Anthropic), the system prompt, and image
// parts by URL and as base64.
func TestToolRoundTripFromAnthropicBackToOpenAIAndOverAgain(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("tool_use",
		append(antToolUse(0, "toolu_a", "get_weather", `{"city":`, `"Paris"}`),
			antToolUse(1, "toolu_b", "get_weather", `{"city":"Tokyo"}`)...)...)))
	gw := mixedScope(t, oa, claude)
	ctx := context.Background()
	img64 := "data:image/png;base64,iVBORw0KGgo="
	req := pgw.ChatRequest{
		Messages: []pgw.Message{
			{Role: pgw.RoleSystem, Content: "Answer with the weather tool."},
			{Role: pgw.RoleUser, Parts: []pgw.ContentPart{
				pgw.TextPart("Weather where these were taken?"),
				pgw.ImagePart(img64, ""),
				pgw.ImagePart("https://example.com/tokyo.jpg", ""),
			}},
		},
		Tools: []pgw.Tool{weatherTool},
	}

	// Turn 1: the primary is down, the Anthropic backup asks for two tools.
	st, err := gw.ChatStream(ctx, req)
	require.NoError(t, err)
	first := streamAll(t, st)
	assert.Equal(t, "claude", st.Source())
	assert.Equal(t, "tool_calls", first.FinishReason)
	require.Equal(t, []pgw.ToolCall{
		{ID: "toolu_a", Type: "function", Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		{ID: "toolu_b", Type: "function", Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Tokyo"}`}},
	}, first.ToolCalls)

	// Turn 2: the primary is back and gets the conversation in its wire.
	oa.script(sseReply(oaEvents("stop", `{"role":"assistant","content":""}`, `{"content":"Paris 18, "}`, `{"content":"Tokyo 22."}`)))
	req.Messages = append(req.Messages,
		pgw.Message{Role: pgw.RoleAssistant, ToolCalls: first.ToolCalls},
		pgw.Message{Role: pgw.RoleTool, ToolCallID: "toolu_a", Content: `{"temp_c":18}`},
		pgw.Message{Role: pgw.RoleTool, ToolCallID: "toolu_b", Content: `{"temp_c":22}`})
	second, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "oa", second.Source)
	assert.Equal(t, "Paris 18, Tokyo 22.", second.Content)
	assert.Equal(t, "stop", second.FinishReason)
	assert.Equal(t, pgw.Usage{PromptTokens: 9, CompletionTokens: 4, TotalTokens: 13}, second.Usage)
	var oaBody struct {
		Messages []map[string]any `json:"messages"`
	}
	oa.last(t, &oaBody)
	require.Len(t, oaBody.Messages, 5)
	assert.Equal(t, map[string]any{"role": "system", "content": "Answer with the weather tool."}, oaBody.Messages[0])
	assert.Equal(t, []any{
		map[string]any{"type": "text", "text": "Weather where these were taken?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": img64}},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/tokyo.jpg"}},
	}, oaBody.Messages[1]["content"])
	assert.Equal(t, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"id": "toolu_a", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
		map[string]any{"id": "toolu_b", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Tokyo"}`}},
	}}, oaBody.Messages[2])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "toolu_a", "content": `{"temp_c":18}`}, oaBody.Messages[3])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "toolu_b", "content": `{"temp_c":22}`}, oaBody.Messages[4])

	// Turn 3: the primary fails again; the backup gets the same turns in
	// its own wire.
	oa.script(unavailable)
	claude.script(sseReply(antEvents("end_turn", antText(0, "Paris 18, Tokyo 22.")...)))
	third, err := gw.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "claude", third.Source)
	assert.Equal(t, "Paris 18, Tokyo 22.", third.Content)
	assert.Equal(t, "stop", third.FinishReason)
	var antBody struct {
		System    string           `json:"system"`
		MaxTokens int              `json:"max_tokens"`
		Messages  []map[string]any `json:"messages"`
	}
	claude.last(t, &antBody)
	assert.Equal(t, "Answer with the weather tool.", antBody.System)
	assert.Equal(t, 300, antBody.MaxTokens)
	require.Len(t, antBody.Messages, 3, "user, assistant, and one user turn with both tool results")
	assert.Equal(t, map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "Weather where these were taken?"},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/tokyo.jpg"}},
	}}, antBody.Messages[0])
	assert.Equal(t, map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
		map[string]any{"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": map[string]any{"city": "Tokyo"}},
	}}, antBody.Messages[1])
	assert.Equal(t, map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": []any{map[string]any{"type": "text", "text": `{"temp_c":18}`}}},
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "content": []any{map[string]any{"type": "text", "text": `{"temp_c":22}`}}},
	}}, antBody.Messages[2])
}

// Anthropic's stop reasons reach the caller as OpenAI's finish reasons.
func TestAnthropicStopReasonsAreMappedToFinishReasons(t *testing.T) {
	for stop, finish := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "content_filter",
	} {
		t.Run(stop, func(t *testing.T) {
			oa := newWireServer(t, unavailable)
			claude := newWireServer(t, sseReply(antEvents(stop, antText(0, "partial")...)))
			gw := mixedScope(t, oa, claude)
			resp, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err)
			assert.Equal(t, "claude", resp.Source)
			assert.Equal(t, finish, resp.FinishReason)
		})
	}
}

// Extra adds provider fields to either wire without touching the modelled
// ones; an Extra key that one source's transport writes itself fails the
// call before any attempt, even when the first source could carry it.
func TestExtraIsMergedOnEachWireAndAConflictFailsUpFront(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "ok")...)))
	gw := mixedScope(t, oa, claude)
	topP := 0.5
	req := pgw.ChatRequest{
		Messages: []pgw.Message{{Role: pgw.RoleSystem, Content: "Be brief."}, {Role: pgw.RoleUser, Content: "hi"}},
		TopP:     &topP,
		Stop:     []string{"END"},
		User:     "u-1",
		Extra:    map[string]any{"top_k": 5, "logprobs": true},
	}
	_, err := gw.Chat(context.Background(), req)
	require.NoError(t, err)
	var oaBody, antBody map[string]any
	oa.last(t, &oaBody)
	claude.last(t, &antBody)
	for name, body := range map[string]map[string]any{"openai": oaBody, "anthropic": antBody} {
		assert.Equal(t, float64(5), body["top_k"], name)
		assert.Equal(t, true, body["logprobs"], name)
		assert.Equal(t, 0.5, body["top_p"], name)
		assert.Equal(t, true, body["stream"], name)
	}
	assert.Equal(t, "gpt-4o-mini", oaBody["model"])
	assert.Equal(t, []any{"END"}, oaBody["stop"])
	assert.Equal(t, "u-1", oaBody["user"])
	assert.Equal(t, "claude-sonnet-4-5", antBody["model"])
	assert.Equal(t, []any{"END"}, antBody["stop_sequences"])
	assert.Equal(t, map[string]any{"user_id": "u-1"}, antBody["metadata"])
	assert.Equal(t, "Be brief.", antBody["system"])

	before := oa.requests() + claude.requests()
	req.Extra = map[string]any{"system": "override"}
	_, err = gw.Chat(context.Background(), req)
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Extra[system]", re.Field)
	assert.Equal(t, "claude", re.Source)
	assert.Equal(t, before, oa.requests()+claude.requests(), "no attempt was made")
}

// A JSON object answer is served on Anthropic by a forced tool whose input
// is the caller's content; structured output with tools cannot be
// expressed there and fails before any attempt, naming the field.
func TestJSONObjectOnAnthropicAndJSONSchemaWithToolsRefusedUpFront(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("tool_use", antToolUse(0, "toolu_j", "json_answer", `{"ok":`, `true}`)...)))
	gw := mixedScope(t, oa, claude)
	resp, err := gw.Chat(context.Background(), pgw.ChatRequest{
		Messages:       []pgw.Message{{Role: pgw.RoleUser, Content: "Reply in JSON"}},
		ResponseFormat: &pgw.ResponseFormat{Type: pgw.FormatJSONObject},
	})
	require.NoError(t, err)
	assert.Equal(t, "claude", resp.Source)
	assert.JSONEq(t, `{"ok":true}`, resp.Content)
	assert.Empty(t, resp.ToolCalls)
	assert.Equal(t, "stop", resp.FinishReason)
	var antBody struct {
		Tools      []map[string]any `json:"tools"`
		ToolChoice map[string]any   `json:"tool_choice"`
	}
	claude.last(t, &antBody)
	require.Len(t, antBody.Tools, 1)
	assert.Equal(t, "json_answer", antBody.Tools[0]["name"])
	assert.Equal(t, map[string]any{"type": "tool", "name": "json_answer"}, antBody.ToolChoice)

	before := oa.requests() + claude.requests()
	_, err = gw.Chat(context.Background(), pgw.ChatRequest{
		Messages: []pgw.Message{{Role: pgw.RoleUser, Content: "Reply in JSON"}},
		Tools:    []pgw.Tool{weatherTool},
		ResponseFormat: &pgw.ResponseFormat{Type: pgw.FormatJSONSchema, JSONSchema: &pgw.JSONSchema{
			Name: "answer", Schema: map[string]any{"type": "object"},
		}},
	})
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "ResponseFormat", re.Field)
	assert.Equal(t, "claude", re.Source)
	assert.Equal(t, before, oa.requests()+claude.requests())
}

// A caller who cancels an Anthropic stream mid-answer gets the
// cancellation from Recv, and the source's in-flight permit is given back:
// the next call runs at once on a source that allows one call at a time.
func TestAnthropicStreamCanceledMidAnswerGivesItsPermitBack(t *testing.T) {
	up := testutil.NewUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":                  "CHAT",
		"CHAT__SOURCES":               "claude",
		"CHAT__CLAUDE__BASE_URL":      up.URL,
		"CHAT__CLAUDE__PROVIDER":      "anthropic",
		"CHAT__CLAUDE__MODEL":         "claude-sonnet-4-5",
		"CHAT__CLAUDE__MAX_IN_FLIGHT": "1",
		"CHAT__QUOTA_FULL":            "fail_fast",
	})
	up.Enqueue(testutil.Messages, testutil.Reply{Chunks: []string{"one ", "two"},
		BeforeChunk: func(ctx context.Context, i int) {
			if i == 1 {
				<-ctx.Done() // the second piece never comes
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	defer st.Close()
	ch, err := st.Recv()
	require.NoError(t, err)
	assert.Equal(t, "one ", ch.Delta)
	_, err = gw.Chat(context.Background(), hello())
	require.Error(t, err, "while the stream runs, its permit is taken")
	err = nil
	cancel()
	for err == nil {
		_, err = st.Recv()
	}
	require.ErrorIs(t, err, context.Canceled)

	resp, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err, "the canceled stream's permit was given back")
	assert.Equal(t, "claude", resp.Source)
}
