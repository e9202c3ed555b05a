package pgw_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// guardedUpstream fails the test on any request until it is opened; once
// open it answers 400, which comes back to the caller at once.
type guardedUpstream struct {
	*httptest.Server
	open atomic.Bool
}

func newGuardedUpstream(t *testing.T) *guardedUpstream {
	g := &guardedUpstream{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.open.Load() {
			t.Errorf("a request that cannot be sent reached the upstream: %s %s", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"rejected by the test upstream","type":"invalid_request_error"}}`))
	}))
	t.Cleanup(g.Close)
	return g
}

// refusedCase is one request that cannot be sent, through one face.
type refusedCase struct {
	name  string
	scope string
	call  func(ctx context.Context, gw *pgw.GatewayClient) error
	field string
	text  string // the whole error text
}

func chatFaces(name, field, text string, req pgw.ChatRequest) []refusedCase {
	return []refusedCase{
		{name: "Chat/" + name, scope: pgw.ScopeChat, field: field, text: text, call: func(ctx context.Context, gw *pgw.GatewayClient) error {
			_, err := gw.Chat(ctx, req)
			return err
		}},
		{name: "ChatStream/" + name, scope: pgw.ScopeChat, field: field, text: text, call: func(ctx context.Context, gw *pgw.GatewayClient) error {
			st, err := gw.ChatStream(ctx, req)
			if st != nil {
				_ = st.Close()
				return errors.New("a stream was opened")
			}
			return err
		}},
	}
}

func refusedCases() []refusedCase {
	user := []pgw.Message{{Role: pgw.RoleUser, Content: "hi"}}
	yes, temp, negTemp := true, 2.5, -0.1
	tools := []pgw.Tool{pgw.FunctionTool("get_weather", "", nil), pgw.FunctionTool("lookup", "", nil)}
	var cs []refusedCase
	for _, c := range []struct {
		name, field, text string
		req               pgw.ChatRequest
	}{
		{"no messages", "Messages", "pgw: chat request field Messages: empty (legal: at least one message)",
			pgw.ChatRequest{}},
		{"parallel tool calls without tools", "ParallelToolCalls", "pgw: chat request field ParallelToolCalls: set without Tools (legal: nil, or set together with Tools)",
			pgw.ChatRequest{Messages: user, ParallelToolCalls: &yes}},
		{"unknown role", "Messages[0].Role", `pgw: chat request field Messages[0].Role: "bot" (legal: system, developer, user, assistant, tool)`,
			pgw.ChatRequest{Messages: []pgw.Message{{Role: "bot", Content: "hi"}}}},
		{"tool message without its call's ID", "Messages[1].ToolCallID", "pgw: chat request field Messages[1].ToolCallID: empty on a tool message (legal: the ID of the call it answers)",
			pgw.ChatRequest{Messages: []pgw.Message{user[0], {Role: pgw.RoleTool, Content: "42"}}}},
		{"image part without a URL", "Messages[0].Parts[0].ImageURL.URL", "pgw: chat request field Messages[0].Parts[0].ImageURL.URL: empty (legal: an http(s) URL or a data: URI)",
			pgw.ChatRequest{Messages: []pgw.Message{{Role: pgw.RoleUser, Parts: []pgw.ContentPart{{Type: pgw.PartImageURL}}}}}},
		{"negative max tokens", "MaxTokens", "pgw: chat request field MaxTokens: -1 (legal: ≥ 0, 0 for the default)",
			pgw.ChatRequest{Messages: user, MaxTokens: -1}},
		{"temperature above 2", "Temperature", "pgw: chat request field Temperature: 2.5 (legal: 0 to 2)",
			pgw.ChatRequest{Messages: user, Temperature: &temp}},
		{"negative temperature", "Temperature", "pgw: chat request field Temperature: -0.1 (legal: 0 to 2)",
			pgw.ChatRequest{Messages: user, Temperature: &negTemp}},
		{"empty message on an Anthropic source", "Messages[0].Content",
			`pgw: chat request field Messages[0].Content cannot be sent to source "claude" (provider anthropic): empty (legal on Anthropic: some text, an image or a tool call; only the final assistant message may be empty)`,
			pgw.ChatRequest{Messages: []pgw.Message{{Role: pgw.RoleUser}}}},
		{"empty text part on an Anthropic source", "Messages[0].Parts[1].Text",
			`pgw: chat request field Messages[0].Parts[1].Text cannot be sent to source "claude" (provider anthropic): empty (legal on Anthropic: non-empty text)`,
			pgw.ChatRequest{Messages: []pgw.Message{{Role: pgw.RoleUser, Parts: []pgw.ContentPart{pgw.TextPart("look"), pgw.TextPart("")}}}}},
		{"only a system message on an Anthropic source", "Messages",
			`pgw: chat request field Messages cannot be sent to source "claude" (provider anthropic): only system or developer messages (legal on Anthropic: at least one user or assistant message)`,
			pgw.ChatRequest{Messages: []pgw.Message{{Role: pgw.RoleSystem, Content: "Be brief."}}}},
		{"json schema format with a nil map schema", "ResponseFormat.JSONSchema.Schema",
			"pgw: chat request field ResponseFormat.JSONSchema.Schema: no schema (legal: a JSON schema object)",
			pgw.ChatRequest{Messages: user, ResponseFormat: &pgw.ResponseFormat{Type: pgw.FormatJSONSchema, JSONSchema: &pgw.JSONSchema{Name: "answer", Schema: map[string]any(nil)}}}},
		{"tool choice naming a function without tools", "ToolChoice",
			`pgw: chat request field ToolChoice: function "now" without Tools (legal: the name of a function offered in Tools)`,
			pgw.ChatRequest{Messages: user, ToolChoice: pgw.ToolChoiceFunction{Name: "now"}}},
		{"tool choice naming a function not offered", "ToolChoice",
			`pgw: chat request field ToolChoice: function "now" is not one of Tools (legal: one of "get_weather", "lookup")`,
			pgw.ChatRequest{Messages: user, Tools: tools, ToolChoice: &pgw.ToolChoiceFunction{Name: "now"}}},
		{"tool choice required without tools", "ToolChoice",
			"pgw: chat request field ToolChoice: required without Tools (legal: offer at least one tool in Tools, or leave ToolChoice nil)",
			pgw.ChatRequest{Messages: user, ToolChoice: pgw.ToolChoiceRequired}},
		{"tool choice any", "ToolChoice",
			`pgw: chat request field ToolChoice: "any" (legal: auto, none, required, or a ToolChoiceFunction; "required" is sent to Anthropic as its "any")`,
			pgw.ChatRequest{Messages: user, Tools: tools, ToolChoice: "any"}},
		{"tool choice a nil function", "ToolChoice",
			`pgw: chat request field ToolChoice: a nil *ToolChoiceFunction (legal: nil, "auto", "none", "required", or a ToolChoiceFunction naming one of Tools)`,
			pgw.ChatRequest{Messages: user, Tools: tools, ToolChoice: (*pgw.ToolChoiceFunction)(nil)}},
	} {
		cs = append(cs, chatFaces(c.name, c.field, c.text, c.req)...)
	}
	// The Messages API pairs each tool_use with a tool_result in the very
	// next turn, the results first.
	call := func(ids ...string) pgw.Message {
		m := pgw.Message{Role: pgw.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, pgw.ToolCall{ID: id, Function: pgw.FunctionCall{Name: "lookup", Arguments: `{}`}})
		}
		return m
	}
	result := func(id string) pgw.Message { return pgw.Message{Role: pgw.RoleTool, ToolCallID: id, Content: "found"} }
	for _, c := range []struct {
		name, field, problem string
		msgs                 []pgw.Message
	}{
		{"tool result answering no call", "Messages[3].ToolCallID",
			`"call_9" answers no tool call of the assistant message just before it (legal on Anthropic: the ID of a call that message made)`,
			[]pgw.Message{user[0], call("call_0"), result("call_0"), result("call_9")}},
		{"tool result without an assistant message before it", "Messages[1].ToolCallID",
			`"call_0" answers no tool call of the assistant message just before it (legal on Anthropic: the ID of a call that message made)`,
			[]pgw.Message{user[0], result("call_0")}},
		{"tool result after a user message", "Messages[3].ToolCallID",
			"a tool result after the user message Messages[2] (legal on Anthropic: tool results right after the assistant message that made the calls, before any user message)",
			[]pgw.Message{user[0], call("call_0"), {Role: pgw.RoleUser, Content: "wait"}, result("call_0")}},
		{"tool call without a result", "Messages[1].ToolCalls[1].ID",
			`"call_1" has no tool result right after the assistant message (legal on Anthropic: a tool message answering each call, right after the assistant message and before any user message)`,
			[]pgw.Message{user[0], call("call_0", "call_1"), result("call_0"), {Role: pgw.RoleUser, Content: "go on"}}},
		{"tool call answered after another assistant message", "Messages[1].ToolCalls[1].ID",
			`"call_1" has no tool result right after the assistant message (legal on Anthropic: a tool message answering each call, right after the assistant message and before any user message)`,
			[]pgw.Message{user[0], call("call_0", "call_1"), result("call_0"), {Role: pgw.RoleAssistant, Content: "One more."}, result("call_1")}},
	} {
		cs = append(cs, chatFaces(c.name+" on an Anthropic source", c.field,
			"pgw: chat request field "+c.field+` cannot be sent to source "claude" (provider anthropic): `+c.problem,
			pgw.ChatRequest{Messages: c.msgs, Tools: tools})...)
	}
	// Arguments of a past tool call that are not a JSON object cannot be an
	// Anthropic tool_use input; the OpenAI wire carries them as text.
	for _, a := range []struct{ name, args, what string }{
		{"malformed", `{"city":`, "not valid JSON"},
		{"not JSON", "not json", "not valid JSON"},
		{"an array", "[1,2]", "a JSON array, not an object"},
		{"a string", `"Paris"`, "a JSON string, not an object"},
		{"null", "null", "JSON null, not an object"},
		{"a number", " 42 ", "a JSON number, not an object"},
	} {
		req := pgw.ChatRequest{Messages: []pgw.Message{
			user[0],
			{Role: pgw.RoleAssistant, ToolCalls: []pgw.ToolCall{
				{ID: "call_0", Function: pgw.FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}},
				{ID: "call_1", Function: pgw.FunctionCall{Name: "get_weather", Arguments: a.args}},
			}},
			{Role: pgw.RoleTool, ToolCallID: "call_0", Content: "found"},
			{Role: pgw.RoleTool, ToolCallID: "call_1", Content: "18"},
		}, Tools: tools}
		cs = append(cs, chatFaces("tool call arguments "+a.name+" on an Anthropic source", "Messages[1].ToolCalls[1].Function.Arguments",
			`pgw: chat request field Messages[1].ToolCalls[1].Function.Arguments cannot be sent to source "claude" (provider anthropic): `+a.what+
				" (legal on Anthropic: a JSON object, or empty for a call without arguments; the Messages API takes a tool call's input as an object)", req)...)
	}
	embed := func(req pgw.EmbedRequest) func(context.Context, *pgw.GatewayClient) error {
		return func(ctx context.Context, gw *pgw.GatewayClient) error {
			resp, err := gw.Embed(ctx, req)
			if resp.Vectors != nil {
				return errors.New("vectors came back")
			}
			return err
		}
	}
	cs = append(cs,
		refusedCase{name: "Embed/no inputs", scope: pgw.ScopeEmbedding, field: "Inputs", text: "pgw: embedding request field Inputs: empty (legal: at least one input)",
			call: embed(pgw.EmbedRequest{})},
		refusedCase{name: "Embed/empty inputs", scope: pgw.ScopeEmbedding, field: "Inputs", text: "pgw: embedding request field Inputs: empty (legal: at least one input)",
			call: embed(pgw.EmbedRequest{Inputs: []string{}})},
		refusedCase{name: "Embed/an empty input", scope: pgw.ScopeEmbedding, field: "Inputs[2]",
			text: "pgw: embedding request field Inputs[2]: the empty string (legal: text of at least one character)",
			call: embed(pgw.EmbedRequest{Inputs: []string{"a", " ", "", "d"}})},
		refusedCase{name: "OCR/no image", scope: pgw.ScopeOCR, field: "Image", text: "pgw: OCR request field Image: empty (legal: the image's bytes)",
			call: func(ctx context.Context, gw *pgw.GatewayClient) error {
				_, err := gw.OCR(ctx, pgw.OCRRequest{Prompt: "read it"})
				return err
			}},
		refusedCase{name: "OCRPages/no pages", scope: pgw.ScopeOCR, field: "pages", text: "pgw: OCR request field pages: empty (legal: at least one page)",
			call: func(ctx context.Context, gw *pgw.GatewayClient) error {
				out, err := gw.OCRPages(ctx, nil)
				if out != nil {
					return errors.New("pages came back")
				}
				return err
			}},
		refusedCase{name: "OCRPages/a page without an image", scope: pgw.ScopeOCR, field: "pages[1].Image", text: "pgw: OCR request field pages[1].Image: empty (legal: the image's bytes)",
			call: func(ctx context.Context, gw *pgw.GatewayClient) error {
				out, err := gw.OCRPages(ctx, []pgw.OCRRequest{{Image: []byte("page 0")}, {}, {Image: []byte("page 2")}})
				if out != nil {
					return errors.New("pages came back")
				}
				return err
			}},
	)
	return cs
}

// TestRequestThatCannotBeSentFailsBeforeAdmission: through every typed face,
// a request that no provider would take (or that one source of the scope
// cannot carry) is a *RequestError naming the field and what is legal,
// returned before admission — nothing reaches the upstream, no attempt
// starts, no quota permit is taken (each source allows one request a
// minute, and the next call is still admitted) — and the observer gets one
// CallResult "caller_error" without attempts.
func TestRequestThatCannotBeSentFailsBeforeAdmission(t *testing.T) {
	for _, c := range refusedCases() {
		t.Run(c.name, func(t *testing.T) {
			up := newGuardedUpstream(t)
			env := map[string]string{
				"PGW_SCOPES":             c.scope,
				c.scope + "__QUOTA_FULL": "fail_fast",
			}
			sources := []string{"primary"}
			if c.scope == pgw.ScopeChat {
				sources = []string{"primary", "claude"}
				env["CHAT__CLAUDE__PROVIDER"] = "anthropic"
				env["CHAT__CLAUDE__MODEL"] = "claude-sonnet-4-5"
			}
			env[c.scope+"__SOURCES"] = strings.Join(sources, ",")
			for _, src := range sources {
				key := c.scope + "__" + strings.ToUpper(src)
				env[key+"__BASE_URL"] = up.URL + "/v1"
				env[key+"__RPM"] = "1"
			}
			gw, rec := newGateway(t, env)

			err := c.call(context.Background(), gw)
			var re *pgw.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, c.field, re.Field)
			assert.EqualError(t, err, c.text)
			assert.Equal(t, pgw.CodeRequest, re.Code())
			assert.Empty(t, rec.Attempts(), "no attempt was made")
			require.Len(t, rec.calls, 1)
			assert.Equal(t, pgw.CallResult{Scope: c.scope, Result: pgw.ResultCallerError, Err: re,
				Start: rec.calls[0].Start, Duration: rec.calls[0].Duration}, rec.calls[0])

			// The refused call took no permit: each source, which allows
			// one request a minute, still admits one.
			up.open.Store(true)
			var answered []string
			for range sources {
				err = validCall(c.scope)(context.Background(), gw)
				var he *pgw.HTTPError
				require.ErrorAs(t, err, &he, "the next call is admitted and answered")
				assert.Equal(t, http.StatusBadRequest, he.StatusCode)
				answered = append(answered, he.Source)
			}
			assert.ElementsMatch(t, sources, answered)
		})
	}
}

func validCall(scope string) func(context.Context, *pgw.GatewayClient) error {
	switch scope {
	case pgw.ScopeChat:
		return func(ctx context.Context, gw *pgw.GatewayClient) error { _, err := gw.Chat(ctx, hello()); return err }
	case pgw.ScopeEmbedding:
		return func(ctx context.Context, gw *pgw.GatewayClient) error {
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a"}})
			return err
		}
	}
	return func(ctx context.Context, gw *pgw.GatewayClient) error {
		_, err := gw.OCR(ctx, pgw.OCRRequest{Image: []byte("page")})
		return err
	}
}
