// Command tools shows a tool-calling round trip through pgw, with fail-over
// from an OpenAI-compatible source to an Anthropic one in the middle of it,
// in a second and with no network: it starts a fake upstream in this process
// that speaks both APIs.
//
//	go run ./examples/tools
//
// What you will see:
//
//  1. The CHAT scope lists "openai" (PROVIDER=openai, tried first) and
//     "claude" (PROVIDER=anthropic, PRIORITY=1, the backup).
//  2. Turn 1: the model, on openai, asks for get_weather({"city":"Paris"}).
//  3. The program runs the tool itself and appends the assistant's tool call
//     and the tool's result to the conversation.
//  4. Turn 2: openai answers HTTP 500; the call fails over to claude, which
//     gets the same conversation translated to Anthropic's Messages API —
//     tools, tool_use and tool_result blocks — and writes the final answer.
//  5. The request bodies the two transports sent are printed, so you can see
//     the one ChatRequest in both wire formats.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

func main() {
	bodies := flag.Bool("bodies", true, "print the request bodies the two transports sent")
	flag.Parse()
	if err := run(os.Stdout, *bodies); err != nil {
		fmt.Fprintln(os.Stderr, "tools:", err)
		os.Exit(1)
	}
}

// getWeather is the tool the program offers: the model asks, the program
// runs it.
func getWeather(args string) (string, error) {
	var in struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		// Arguments are the model's text and may be malformed: say so to
		// the model rather than fail.
		return `{"error":"arguments are not valid JSON"}`, nil
	}
	temps := map[string]int{"Paris": 18, "Tokyo": 24}
	return fmt.Sprintf(`{"city":%q,"temp_c":%d}`, in.City, temps[in.City]), nil
}

func run(w io.Writer, bodies bool) error {
	up, stop := testutil.StartUpstream()
	defer stop()
	// Turn 1: openai asks for the tool. Turn 2: openai fails, claude answers.
	up.Enqueue(testutil.Chat,
		testutil.Reply{ToolCalls: []testutil.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		testutil.Reply{Status: http.StatusInternalServerError, Message: "the primary is down"},
	)
	up.Enqueue(testutil.Messages, testutil.Reply{Text: "It is 18 °C in Paris right now."})

	env := map[string]string{
		"PGW_SCOPES":             "CHAT",
		"CHAT__SOURCES":          "openai,claude",
		"CHAT__OPENAI__BASE_URL": up.URL,
		"CHAT__OPENAI__API_KEY":  "sk-demo-openai",
		"CHAT__OPENAI__MODEL":    "gpt-4o-mini",
		"CHAT__CLAUDE__PROVIDER": "anthropic",
		"CHAT__CLAUDE__BASE_URL": up.URL,
		"CHAT__CLAUDE__API_KEY":  "sk-demo-anthropic",
		"CHAT__CLAUDE__MODEL":    "claude-sonnet-4-5",
		"CHAT__CLAUDE__PRIORITY": "1",
	}
	s, err := config.FromMap(env)
	if err != nil {
		return err
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw, err := pgw.New(ctx, *s, pgw.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer gw.Close()

	req := pgw.ChatRequest{
		Messages: []pgw.Message{
			{Role: pgw.RoleSystem, Content: "You answer weather questions with the get_weather tool."},
			{Role: pgw.RoleUser, Content: "What is the weather in Paris?"},
		},
		Tools: []pgw.Tool{pgw.FunctionTool("get_weather", "Current weather of a city", map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []string{"city"},
		})},
		MaxTokens: 300,
	}

	fmt.Fprintln(w, "turn 1")
	resp, err := gw.Chat(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  answered by %s, finish_reason=%s\n", resp.Source, resp.FinishReason)
	req.Messages = append(req.Messages, pgw.Message{Role: pgw.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
	for _, tc := range resp.ToolCalls {
		out, err := getWeather(tc.Function.Arguments)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  model asks %s(%s) → the program answers %s\n", tc.Function.Name, tc.Function.Arguments, out)
		req.Messages = append(req.Messages, pgw.Message{Role: pgw.RoleTool, ToolCallID: tc.ID, Content: out})
	}

	fmt.Fprintln(w, "turn 2")
	resp, err = gw.Chat(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  openai answered HTTP 500; answered by %s, finish_reason=%s\n", resp.Source, resp.FinishReason)
	fmt.Fprintf(w, "  %q\n", resp.Content)
	fmt.Fprintf(w, "  usage: %d prompt + %d completion = %d tokens\n", resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.Usage.TotalTokens)

	if bodies {
		fmt.Fprintln(w, "\nthe OpenAI-compatible transport sent (POST /v1/chat/completions):")
		printJSON(w, up.LastRequest(testutil.Chat).Body)
		fmt.Fprintln(w, "\nthe Anthropic transport sent (POST /v1/messages):")
		printJSON(w, up.LastRequest(testutil.Messages).Body)
	}
	return nil
}

func printJSON(w io.Writer, b []byte) {
	var out bytes.Buffer
	if json.Indent(&out, b, "  ", "  ") != nil {
		out.Write(b)
	}
	fmt.Fprintf(w, "  %s\n", out.Bytes())
}
