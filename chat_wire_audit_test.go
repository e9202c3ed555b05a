package pgw_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// auditConversation is the second turn of a tool conversation as a real
// application sends it: a system prompt, a user message with text and two
// images (a data: URI and an https URL), the assistant's text with two
// tool calls, and both results; with two tools, a stop sequence, top_p,
// no parallel calls and an end user.
func auditConversation(t *testing.T, callA, callB string) pgw.ChatRequest {
	t.Helper()
	topP, parallel := 0.9, false
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG(t))
	return pgw.ChatRequest{
		Messages: []pgw.Message{
			{Role: pgw.RoleSystem, Content: "You are terse."},
			{Role: pgw.RoleUser, Parts: []pgw.ContentPart{
				pgw.TextPart("Where was this taken, and what is the weather and time there?"),
				pgw.ImagePart(png, ""),
				pgw.ImagePart("https://example.com/street.jpg", "auto"),
			}},
			{Role: pgw.RoleAssistant, Content: "Let me check.", ToolCalls: []pgw.ToolCall{
				{ID: callA, Type: "function", Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{ID: callB, Type: "function", Function: pgw.FunctionCall{Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`}},
			}},
			{Role: pgw.RoleTool, ToolCallID: callA, Content: `{"temp_c":18}`},
			{Role: pgw.RoleTool, ToolCallID: callB, Content: `"14:00"`},
		},
		Tools: []pgw.Tool{
			weatherTool,
			pgw.FunctionTool("get_time", "Local time in a time zone", map[string]any{
				"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}, "required": []string{"tz"},
			}),
		},
		Stop:              []string{"END"},
		TopP:              &topP,
		ParallelToolCalls: &parallel,
		User:              "user-42",
	}
}

// A primary that fails on the second turn of a tool conversation hands the
// whole conversation to the Anthropic backup in the Messages API's own
// form: the system prompt apart, the image as a base64 block and as a url
// block, the assistant's text and tool_use blocks with their input as
// objects in one assistant turn, both tool_result blocks in the one user
// turn right after it, the tools with input_schema, no parallel calls as
// disable_parallel_tool_use, stop_sequences, top_p and metadata.user_id.
// The primary got the same conversation in OpenAI's form. The backup's
// streamed tool call, its input in fragments, is assembled into the answer.
func TestAuditFailOverMidConversationCarriesToolsResultsAndImagesToAnthropic(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("tool_use",
		append(antText(0, "Checking."), antToolUse(1, "toolu_01X", "get_weather", `{"ci`, `ty": "Lo`, `ndon"}`)...)...)))
	gw := mixedScope(t, oa, claude)
	req := auditConversation(t, "call_A", "call_B")
	png := req.Messages[1].Parts[1].ImageURL.URL

	resp, err := gw.Chat(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "claude", resp.Source)
	assert.Equal(t, "Checking.", resp.Content)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, []pgw.ToolCall{{ID: "toolu_01X", Type: "function",
		Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city": "London"}`}}}, resp.ToolCalls)

	schema := func(prop string) string {
		return fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]}`, prop, prop)
	}
	var oaBody, claudeBody map[string]any
	oa.last(t, &oaBody)
	claude.last(t, &claudeBody)
	assertJSON(t, `{
		"model": "gpt-4o-mini",
		"stream": true, "stream_options": {"include_usage": true},
		"messages": [
			{"role": "system", "content": "You are terse."},
			{"role": "user", "content": [
				{"type": "text", "text": "Where was this taken, and what is the weather and time there?"},
				{"type": "image_url", "image_url": {"url": "`+png+`"}},
				{"type": "image_url", "image_url": {"url": "https://example.com/street.jpg", "detail": "auto"}}]},
			{"role": "assistant", "content": "Let me check.", "tool_calls": [
				{"id": "call_A", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
				{"id": "call_B", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Europe/Paris\"}"}}]},
			{"role": "tool", "tool_call_id": "call_A", "content": "{\"temp_c\":18}"},
			{"role": "tool", "tool_call_id": "call_B", "content": "\"14:00\""}],
		"tools": [
			{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": `+schema("city")+`}},
			{"type": "function", "function": {"name": "get_time", "description": "Local time in a time zone", "parameters": `+schema("tz")+`}}],
		"parallel_tool_calls": false,
		"stop": ["END"], "top_p": 0.9, "user": "user-42"
	}`, oaBody, "the OpenAI-compatible primary")
	assertJSON(t, `{
		"model": "claude-sonnet-4-5", "max_tokens": 300, "stream": true,
		"system": "You are terse.",
		"messages": [
			{"role": "user", "content": [
				{"type": "text", "text": "Where was this taken, and what is the weather and time there?"},
				{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "`+png[len("data:image/png;base64,"):]+`"}},
				{"type": "image", "source": {"type": "url", "url": "https://example.com/street.jpg"}}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Let me check."},
				{"type": "tool_use", "id": "call_A", "name": "get_weather", "input": {"city": "Paris"}},
				{"type": "tool_use", "id": "call_B", "name": "get_time", "input": {"tz": "Europe/Paris"}}]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "call_A", "content": [{"type": "text", "text": "{\"temp_c\":18}"}]},
				{"type": "tool_result", "tool_use_id": "call_B", "content": [{"type": "text", "text": "\"14:00\""}]}]}],
		"tools": [
			{"name": "get_weather", "description": "Current weather of a city", "input_schema": `+schema("city")+`},
			{"name": "get_time", "description": "Local time in a time zone", "input_schema": `+schema("tz")+`}],
		"tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
		"stop_sequences": ["END"], "top_p": 0.9,
		"metadata": {"user_id": "user-42"}
	}`, claudeBody, "the Anthropic backup")
}

// assertJSON asserts that got, a decoded request body, is the JSON want.
func assertJSON(t *testing.T, want string, got map[string]any, msg string) {
	t.Helper()
	b, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, want, string(b), msg)
}

// toHost sends the requests for host to the test server at addr, so that
// a source can name a provider's own host (which changes what is sent)
// without the test leaving the machine; others go where they are sent.
type toHost struct{ host, addr string }

func (h toHost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Hostname() == h.host {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", h.addr
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mistralID is a tool-call ID Mistral's own API takes; it answers any
// other with a 400 ("Tool call id was … but must be a-z, A-Z, 0-9, with a
// length of 9").
var mistralID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// A conversation that fails over to Mistral's own API carries tool-call IDs
// that API takes: the other providers' IDs (OpenAI's call_…, Anthropic's
// toolu_…) go as nine letters and digits, the same in each call and its
// result and distinct from one another and from an ID Mistral issued,
// which is sent as it is; the primary got the IDs as the caller wrote them.
func TestAuditFailOverToMistralSendsToolCallIDsMistralTakes(t *testing.T) {
	oa := newWireServer(t, unavailable)
	mistral := newWireServer(t, sseReply(oaEvents("stop", `{"role":"assistant","content":"Sunny, 14:00."}`)))
	u, err := url.Parse(mistral.URL)
	require.NoError(t, err)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "oa,mistral",
		"CHAT__OA__BASE_URL":      oa.URL,
		"CHAT__MISTRAL__BASE_URL": "http://api.mistral.ai/v1",
		"CHAT__MISTRAL__MODEL":    "mistral-large-latest",
		"CHAT__MISTRAL__PRIORITY": "1",
		"CHAT__FAILURE_THRESHOLD": "100",
	}, pgw.WithHTTPClient(&http.Client{Transport: toHost{"api.mistral.ai", u.Host}}))
	req := auditConversation(t, "call_7fJ2kq9XbN", "toolu_01AbCdEfGh")
	req.User = "" // Mistral's own API has no end-user field
	// A third call, of Mistral's own making, and its result.
	req.Messages = append(req.Messages,
		pgw.Message{Role: pgw.RoleAssistant, ToolCalls: []pgw.ToolCall{{ID: "Ab3dE6gH9", Type: "function",
			Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Lyon"}`}}}},
		pgw.Message{Role: pgw.RoleTool, ToolCallID: "Ab3dE6gH9", Content: `{"temp_c":21}`})

	resp, err := gw.Chat(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "mistral", resp.Source)
	assert.Equal(t, "Sunny, 14:00.", resp.Content)

	type wire struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	ids := func(w wire) (calls, results []string) {
		for _, m := range w.Messages {
			for _, tc := range m.ToolCalls {
				calls = append(calls, tc.ID)
			}
			if m.ToolCallID != "" {
				results = append(results, m.ToolCallID)
			}
		}
		return calls, results
	}
	var sentOA, sentMistral wire
	oa.last(t, &sentOA)
	mistral.last(t, &sentMistral)
	calls, results := ids(sentOA)
	assert.Equal(t, []string{"call_7fJ2kq9XbN", "toolu_01AbCdEfGh", "Ab3dE6gH9"}, calls, "other hosts get the IDs as written")
	assert.Equal(t, calls, results)

	calls, results = ids(sentMistral)
	require.Len(t, calls, 3)
	for _, id := range calls {
		assert.Regexp(t, mistralID, id)
	}
	assert.Equal(t, calls, results, "each result names its call's ID as sent")
	assert.Equal(t, "Ab3dE6gH9", calls[2], "an ID Mistral issued is sent as it is")
	assert.Len(t, map[string]bool{calls[0]: true, calls[1]: true, calls[2]: true}, 3, "no two calls share an ID")
}

// A text part always carries its "text" key, which OpenAI's API requires
// of every text part, even when the text is empty.
func TestAuditEmptyTextPartIsSentWithItsTextKey(t *testing.T) {
	ws := newWireServer(t, sseReply(oaEvents("stop", `{"content":"a cat"}`)))
	gw := partsGateway(t, ws)
	_, err := gw.Chat(context.Background(), pgw.ChatRequest{Messages: []pgw.Message{{Role: pgw.RoleUser, Parts: []pgw.ContentPart{
		pgw.TextPart(""), pgw.ImagePart("https://example.com/cat.jpg", "low"),
	}}}})
	require.NoError(t, err)
	var body map[string]any
	ws.last(t, &body)
	b, err := json.Marshal(body["messages"])
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":""},
		{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg","detail":"low"}}]}]`, string(b))
}

// Mistral's own API refuses a user message right after a tool result with
// a 400 ("Unexpected role 'user' after role 'tool'"): a scope with a
// source there refuses such a conversation before any attempt, naming the
// message and the source, as for every request a fail-over target cannot
// carry; with the assistant's answer to the results in between, the
// conversation is sent.
func TestAuditAUserMessageRightAfterAToolResultIsRefusedForMistral(t *testing.T) {
	oa := newWireServer(t, sseReply(oaEvents("stop", `{"content":"Rain tomorrow."}`)))
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "oa,mistral",
		"CHAT__OA__BASE_URL":      oa.URL,
		"CHAT__MISTRAL__BASE_URL": "http://api.mistral.ai/v1",
		"CHAT__MISTRAL__PRIORITY": "1",
	}, pgw.WithHTTPClient(&http.Client{Transport: toHost{"api.mistral.ai", "127.0.0.1:1"}}))
	call := []pgw.ToolCall{{ID: "Ab3dE6gH9", Type: "function", Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
	msgs := []pgw.Message{
		{Role: pgw.RoleUser, Content: "Weather in Paris?"},
		{Role: pgw.RoleAssistant, ToolCalls: call},
		{Role: pgw.RoleTool, ToolCallID: "Ab3dE6gH9", Content: `{"temp_c":18}`},
		{Role: pgw.RoleUser, Content: "And tomorrow?"},
	}
	_, err := gw.Chat(context.Background(), pgw.ChatRequest{Messages: msgs, Tools: []pgw.Tool{weatherTool}})
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Messages[3].Role", re.Field)
	assert.Equal(t, "mistral", re.Source)
	assert.Contains(t, re.Problem, "Messages[2]")
	assert.Zero(t, oa.requests(), "not even the primary, which could carry it, is asked")

	answered := append(append([]pgw.Message{}, msgs[:3]...),
		pgw.Message{Role: pgw.RoleAssistant, Content: "18 °C."}, msgs[3])
	resp, err := gw.Chat(context.Background(), pgw.ChatRequest{Messages: answered, Tools: []pgw.Tool{weatherTool}})
	require.NoError(t, err)
	assert.Equal(t, "Rain tomorrow.", resp.Content)
	assert.Equal(t, 1, oa.requests())
}

// Anthropic's current models answer a request that sets both temperature
// and top_p with a 400, and its API reference says to alter only one: a
// scope with an Anthropic source refuses the pair before any attempt,
// naming TopP and the source, rather than finding out at the backup
// half-way through a fail-over; either one alone is sent.
func TestAuditTemperatureAndTopPTogetherAreRefusedForAnthropic(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "ok")...)))
	gw := mixedScope(t, oa, claude)
	temp, topP := 0.2, 0.9
	req := hello()
	req.Temperature, req.TopP = &temp, &topP
	_, err := gw.Chat(context.Background(), req)
	var re *pgw.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "TopP", re.Field)
	assert.Equal(t, "claude", re.Source)
	assert.Zero(t, oa.requests()+claude.requests(), "nothing is sent")

	for _, one := range []pgw.ChatRequest{{Messages: req.Messages, Temperature: &temp}, {Messages: req.Messages, TopP: &topP}} {
		resp, err := gw.Chat(context.Background(), one)
		require.NoError(t, err)
		assert.Equal(t, "claude", resp.Source)
		var body map[string]any
		claude.last(t, &body)
		if one.Temperature != nil {
			assert.Equal(t, temp, body["temperature"])
			assert.NotContains(t, body, "top_p")
		} else {
			assert.Equal(t, topP, body["top_p"])
			assert.NotContains(t, body, "temperature")
		}
	}
}

// An OpenAI-compatible model may write whitespace before its tool calls
// ("\n\n", then tool_calls). The Messages API answers a text block of
// whitespace alone with a 400 ("text content blocks must contain
// non-whitespace text"), so when such a turn fails over to Anthropic, its
// tool calls go without that block, which says nothing; the primary got
// the message as written.
func TestAuditWhitespaceBeforeToolCallsIsNotSentToAnthropicAsATextBlock(t *testing.T) {
	oa := newWireServer(t, unavailable)
	claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "18 °C in Paris.")...)))
	gw := mixedScope(t, oa, claude)
	resp, err := gw.Chat(context.Background(), pgw.ChatRequest{
		Messages: []pgw.Message{
			{Role: pgw.RoleUser, Content: "Weather in Paris?"},
			{Role: pgw.RoleAssistant, Content: "\n\n", ToolCalls: []pgw.ToolCall{{ID: "call_1", Type: "function",
				Function: pgw.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
			{Role: pgw.RoleTool, ToolCallID: "call_1", Content: `{"temp_c":18}`},
		},
		Tools: []pgw.Tool{weatherTool},
	})
	require.NoError(t, err)
	assert.Equal(t, "claude", resp.Source)

	var oaBody, claudeBody struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	oa.last(t, &oaBody)
	claude.last(t, &claudeBody)
	require.Len(t, oaBody.Messages, 3)
	assert.JSONEq(t, `"\n\n"`, string(oaBody.Messages[1].Content))
	require.Len(t, claudeBody.Messages, 3)
	assert.Equal(t, "assistant", claudeBody.Messages[1].Role)
	assert.JSONEq(t, `[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]`, string(claudeBody.Messages[1].Content))
}

// OpenAI answers a tool_choice sent without tools with a 400 ("'tool_choice'
// is only allowed when 'tools' are specified"). A ToolChoice of auto or none
// on a request without Tools — a final turn that takes the tools away, a
// choice set once for every call — is what either provider does without
// the key, so the key is not sent, on either wire.
func TestAuditToolChoiceAutoOrNoneWithoutToolsIsNotSent(t *testing.T) {
	for _, choice := range []string{pgw.ToolChoiceAuto, pgw.ToolChoiceNone} {
		t.Run(choice, func(t *testing.T) {
			oa := newWireServer(t, unavailable)
			claude := newWireServer(t, sseReply(antEvents("end_turn", antText(0, "18 °C.")...)))
			gw := mixedScope(t, oa, claude)
			req := hello()
			req.ToolChoice = choice
			resp, err := gw.Chat(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, "claude", resp.Source)
			var oaBody, claudeBody map[string]any
			oa.last(t, &oaBody)
			claude.last(t, &claudeBody)
			assert.NotContains(t, oaBody, "tool_choice")
			assert.NotContains(t, claudeBody, "tool_choice")

			req.Tools = []pgw.Tool{weatherTool}
			_, err = gw.Chat(context.Background(), req)
			require.NoError(t, err)
			oa.last(t, &oaBody)
			claude.last(t, &claudeBody)
			assert.Equal(t, choice, oaBody["tool_choice"], "with tools, the choice is sent")
			assert.Equal(t, map[string]any{"type": choice}, claudeBody["tool_choice"])
		})
	}
}
