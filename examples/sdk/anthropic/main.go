// Command anthropic sends github.com/anthropics/anthropic-sdk-go requests
// through pgw: the SDK is unchanged, its HTTP client is the gateway's
// governed client.
//
//	go run ./anthropic          (from examples/sdk)
//
// With CHAT__SOURCES and the other CHAT__… keys in the environment (the
// sources' PROVIDER=anthropic, BASE_URL=https://api.anthropic.com) it uses
// them; without, it starts two fake upstreams in this process (the first
// answers 529 once) so it runs anywhere.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/examples/sdk/internal/fake"
)

func main() {
	ctx := context.Background()
	gw, err := gateway(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer gw.Close()

	// The glue: point the SDK at pgw, and leave retries to pgw.
	client := anthropic.NewClient(
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
		option.WithAPIKey("set-by-pgw"), // the SDK insists on a key; each source's replaces it
	)

	answer, err := Ask(ctx, client, "Say hello")
	check(err)
	fmt.Println("answer:", answer)
	streamed, err := Stream(ctx, client, "Say hello, streamed")
	check(err)
	fmt.Println("streamed:", streamed)
	name, input, err := ToolCall(ctx, client)
	check(err)
	fmt.Println("tool call:", name, input)
}

// gateway builds the gateway from the environment, or on two fakes.
func gateway(ctx context.Context) (*pgw.GatewayClient, error) {
	if os.Getenv("CHAT__SOURCES") != "" {
		return pgw.NewFromEnv(ctx)
	}
	primary, backup := fake.Start(), fake.Start()
	primary.Enqueue(fake.Reply{Status: 529, Code: "overloaded_error"})
	s, err := config.FromMap(fake.Env("anthropic", primary, backup))
	if err != nil {
		return nil, err
	}
	return pgw.New(ctx, *s)
}

func check(err error) {
	if err != nil {
		if v := pgw.ErrorFrom(err); v != nil {
			log.Fatalf("pgw ended the call: %v", v)
		}
		log.Fatal(err)
	}
}

func params(prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

// Ask sends one message and returns the answer's text.
func Ask(ctx context.Context, client anthropic.Client, prompt string) (string, error) {
	msg, err := client.Messages.New(ctx, params(prompt))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range msg.Content {
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// Stream streams a message and collects its text.
func Stream(ctx context.Context, client anthropic.Client, prompt string) (string, error) {
	stream := client.Messages.NewStreaming(ctx, params(prompt))
	defer stream.Close()
	var b strings.Builder
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			b.WriteString(ev.Delta.Text)
		}
	}
	return b.String(), stream.Err()
}

// ToolCall offers a tool and returns the call the model makes.
func ToolCall(ctx context.Context, client anthropic.Client) (name, input string, err error) {
	p := params("What is the weather in Paris?")
	p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
		Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}},
			Required:   []string{"city"},
		},
	}}}
	msg, err := client.Messages.New(ctx, p)
	if err != nil {
		return "", "", err
	}
	for _, c := range msg.Content {
		if c.Type == "tool_use" {
			return c.Name, string(c.Input), nil
		}
	}
	return "", "", fmt.Errorf("no tool call in the answer")
}
