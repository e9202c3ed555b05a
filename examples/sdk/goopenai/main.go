// Command goopenai sends github.com/sashabaranov/go-openai requests through
// pgw: the SDK is unchanged, its HTTP client is the gateway's governed
// client. go-openai has no retry loop of its own, so there is nothing to
// turn off.
//
//	go run ./goopenai          (from examples/sdk)
//
// With CHAT__SOURCES and the other CHAT__… keys in the environment it uses
// them; without, it starts two fake upstreams in this process (the first
// answers 429 once) so it runs anywhere.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

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

	// The glue: point the SDK at pgw.
	cfg := goopenai.DefaultConfig("")
	cfg.BaseURL, cfg.HTTPClient = pgw.SDKBaseURL, gw.HTTPClient("CHAT")
	client := goopenai.NewClientWithConfig(cfg)

	answer, err := Ask(ctx, client, "Say hello")
	check(err)
	fmt.Println("answer:", answer)
	streamed, err := Stream(ctx, client, "Say hello, streamed")
	check(err)
	fmt.Println("streamed:", streamed)
	name, args, err := ToolCall(ctx, client)
	check(err)
	fmt.Println("tool call:", name, args)
}

// gateway builds the gateway from the environment, or on two fakes.
func gateway(ctx context.Context) (*pgw.GatewayClient, error) {
	if os.Getenv("CHAT__SOURCES") != "" {
		return pgw.NewFromEnv(ctx)
	}
	primary, backup := fake.Start(), fake.Start()
	primary.Enqueue(fake.Reply{Status: 429, RetryAfter: "20"})
	s, err := config.FromMap(fake.Env("openai", primary, backup))
	if err != nil {
		return nil, err
	}
	return pgw.New(ctx, *s)
}

func check(err error) {
	if err == nil {
		return
	}
	// go-openai's errors keep no response, so ErrorFrom cannot reach pgw's
	// verdict here; its code is the APIError's Code.
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode == pgw.SDKVerdictStatus {
		log.Fatalf("pgw ended the call (%v): %s", apiErr.Code, apiErr.Message)
	}
	log.Fatal(err)
}

func request(prompt string) goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:    "gpt-4o-mini",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: prompt}},
	}
}

// Ask sends one chat completion.
func Ask(ctx context.Context, client *goopenai.Client, prompt string) (string, error) {
	resp, err := client.CreateChatCompletion(ctx, request(prompt))
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

// AskJSON asks for a JSON object (JSON mode).
func AskJSON(ctx context.Context, client *goopenai.Client, prompt string) (string, error) {
	req := request(prompt)
	req.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	resp, err := client.CreateChatCompletion(ctx, req)
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

// Stream streams a chat completion and collects it.
func Stream(ctx context.Context, client *goopenai.Client, prompt string) (string, error) {
	stream, err := client.CreateChatCompletionStream(ctx, request(prompt))
	if err != nil {
		return "", err
	}
	defer stream.Close()
	var b strings.Builder
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		if len(r.Choices) > 0 {
			b.WriteString(r.Choices[0].Delta.Content)
		}
	}
}

// ToolCall offers a tool and returns the call the model makes.
func ToolCall(ctx context.Context, client *goopenai.Client) (name, args string, err error) {
	req := request("What is the weather in Paris?")
	req.Tools = []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
		Name:       "get_weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}}}
	resp, err := client.CreateChatCompletion(ctx, req)
	if err != nil {
		return "", "", err
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) == 0 {
		return "", "", fmt.Errorf("no tool call in the answer")
	}
	return calls[0].Function.Name, calls[0].Function.Arguments, nil
}
