package pgw_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A tool call, an image prompt and a json_schema answer run through Chat and
// ChatStream on each transport.
func TestToolsImagesAndJSONSchemaOnEveryTransportAndFace(t *testing.T) {
	cityFormat := &pgw.ResponseFormat{Type: pgw.FormatJSONSchema, JSONSchema: &pgw.JSONSchema{
		Name: "city", Schema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}}
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG(t))
	type kase struct {
		name    string
		req     pgw.ChatRequest
		openai  testutil.Reply // on the OpenAI-compatible endpoint
		claude  testutil.Reply // on the Messages endpoint
		check   func(t *testing.T, r pgw.ChatResponse)
		imageEP bool // the fake files an image prompt under OCR
	}
	cases := []kase{
		{
			name:   "tool call",
			req:    pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Weather in Paris?"}}, Tools: []pgw.Tool{weatherTool}, ToolChoice: pgw.ToolChoiceRequired},
			openai: testutil.Reply{ToolCalls: []testutil.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			claude: testutil.Reply{ToolCalls: []testutil.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			check: func(t *testing.T, r pgw.ChatResponse) {
				require.Len(t, r.ToolCalls, 1)
				assert.Equal(t, "get_weather", r.ToolCalls[0].Function.Name)
				assert.JSONEq(t, `{"city":"Paris"}`, r.ToolCalls[0].Function.Arguments)
				assert.Equal(t, "tool_calls", r.FinishReason)
			},
		},
		{
			name:    "image prompt",
			req:     pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Parts: []pgw.ContentPart{pgw.TextPart("What is this?"), pgw.ImagePart(png, "")}}}},
			openai:  testutil.Reply{Text: "a grey square"},
			claude:  testutil.Reply{Text: "a grey square"},
			imageEP: true,
			check:   func(t *testing.T, r pgw.ChatResponse) { assert.Equal(t, "a grey square", r.Content) },
		},
		{
			name:   "json schema answer",
			req:    pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "A city?"}}, ResponseFormat: cityFormat},
			openai: testutil.Reply{Text: `{"city":"Lyon"}`, Chunks: []string{`{"city":`, `"Lyon"}`}},
			claude: testutil.Reply{ToolCalls: []testutil.ToolCall{{ID: "t", Name: "city", Arguments: `{"city":"Lyon"}`}}},
			check: func(t *testing.T, r pgw.ChatResponse) {
				assert.JSONEq(t, `{"city":"Lyon"}`, r.Content)
				assert.Empty(t, r.ToolCalls)
			},
		},
	}
	faces := map[string]func(gw *pgw.GatewayClient, req pgw.ChatRequest) (pgw.ChatResponse, error){
		"Chat": func(gw *pgw.GatewayClient, req pgw.ChatRequest) (pgw.ChatResponse, error) {
			return gw.Chat(context.Background(), req)
		},
		"ChatStream": func(gw *pgw.GatewayClient, req pgw.ChatRequest) (pgw.ChatResponse, error) {
			st, err := gw.ChatStream(context.Background(), req)
			if err != nil {
				return pgw.ChatResponse{}, err
			}
			defer st.Close()
			var c pgw.Collector
			for {
				ch, err := st.Recv()
				if errors.Is(err, io.EOF) {
					r := c.Response()
					r.Source = st.Source()
					return r, nil
				}
				if err != nil {
					return pgw.ChatResponse{}, err
				}
				c.Add(ch)
			}
		},
	}
	for _, provider := range []string{"openai", "anthropic"} {
		for _, tc := range cases {
			for face, call := range faces {
				t.Run(provider+"/"+tc.name+"/"+face, func(t *testing.T) {
					up := testutil.NewUpstream(t)
					env := map[string]string{
						"PGW_SCOPES":           "CHAT",
						"CHAT__SOURCES":        "only",
						"CHAT__ONLY__BASE_URL": up.URL,
						"CHAT__ONLY__PROVIDER": provider,
					}
					if provider == "anthropic" {
						env["CHAT__ONLY__MODEL"] = "claude-sonnet-4-5" // the Messages API requires one
					}
					gw, _ := newGateway(t, env)
					if provider == "anthropic" {
						up.Enqueue(testutil.Messages, tc.claude)
					} else if tc.imageEP {
						up.Enqueue(testutil.OCR, tc.openai)
					} else {
						up.Enqueue(testutil.Chat, tc.openai)
					}
					r, err := call(gw, tc.req)
					require.NoError(t, err)
					assert.Equal(t, "only", r.Source)
					tc.check(t, r)
				})
			}
		}
	}
}
