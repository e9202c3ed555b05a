// Command openaigo sends github.com/openai/openai-go requests through pgw:
// the SDK is unchanged, its HTTP client is the gateway's governed client.
//
//	go run ./openaigo          (from examples/sdk)
//
// With CHAT__SOURCES and the other CHAT__… keys in the environment it uses
// them; without, it starts two fake upstreams in this process (the first
// answers 429 once) so it runs anywhere.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

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
	client := openai.NewClient(
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
	)

	answer, err := Ask(ctx, client, "Say hello")
	check(err)
	fmt.Println("answer:", answer)
	streamed, err := Stream(ctx, client, "Say hello, streamed")
	check(err)
	fmt.Println("streamed:", streamed)
	name, args, err := ToolCall(ctx, client)
	check(err)
	fmt.Println("tool call:", name, args)
	viaCallStream, err := StreamViaCallStream(ctx, gw, "Say hello through CallStream")
	check(err)
	fmt.Println("through CallStream:", viaCallStream)
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
	if err != nil {
		// A verdict of pgw (every source open, budget spent) comes back as
		// the SDK's error; ErrorFrom returns pgw's own.
		if v := pgw.ErrorFrom(err); v != nil {
			log.Fatalf("pgw ended the call: %v", v)
		}
		log.Fatal(err)
	}
}

// Ask sends one chat completion.
func Ask(ctx context.Context, client openai.Client, prompt string) (string, error) {
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	})
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

// AskJSON asks for a JSON object (JSON mode).
func AskJSON(ctx context.Context, client openai.Client, prompt string) (string, error) {
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:          "gpt-4o-mini",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
	})
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

// Stream streams a chat completion and collects it.
func Stream(ctx context.Context, client openai.Client, prompt string) (string, error) {
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var b strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			b.WriteString(c.Choices[0].Delta.Content)
		}
	}
	return b.String(), stream.Err()
}

// ToolCall offers a tool and returns the call the model makes.
func ToolCall(ctx context.Context, client openai.Client) (name, args string, err error) {
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: shared.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required":   []string{"city"},
			},
		})},
	})
	if err != nil {
		return "", "", err
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) == 0 {
		return "", "", fmt.Errorf("no tool call in the answer")
	}
	return calls[0].Function.Name, calls[0].Function.Arguments, nil
}

// StreamViaCallStream streams with pgw.CallStream instead of the governed
// HTTP client: each attempt opens the SDK's own stream on the source pgw
// picked, and pgw retries until the first chunk that carries content. The
// SDK's stream ends without an error when the upstream closes the body
// mid-answer, so TerminalItem names the chunk that ends a whole answer: an
// end before it is a cut (io.ErrUnexpectedEOF, the source's failure). The
// request asks for usage (include_usage), so the last chunk is the one that
// reports it, after the finish reason: it is the terminal item, since the
// tokens the quota settles on are those reported up to the terminal item.
func StreamViaCallStream(ctx context.Context, gw *pgw.GatewayClient, prompt string) (string, error) {
	params := openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	st, err := pgw.CallStream(ctx, gw, "CHAT", func(ctx context.Context, src pgw.Source) (pgw.Streamer[openai.ChatCompletionChunk], error) {
		client := openai.NewClient(option.WithBaseURL(src.BaseURL), option.WithAPIKey(src.APIKey.Reveal()), option.WithMaxRetries(0))
		p := params
		if src.Model != "" {
			p.Model = src.Model
		}
		return pgw.FromIterator[openai.ChatCompletionChunk](client.Chat.Completions.NewStreaming(ctx, p)), nil
	}, pgw.FirstItem(hasContent), pgw.TerminalItem(reportsUsage), pgw.ItemUsage(chunkUsage))
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		c, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b.String(), nil
			}
			return b.String(), err
		}
		if len(c.Choices) > 0 {
			b.WriteString(c.Choices[0].Delta.Content)
		}
	}
}

// hasContent: a chunk that carries part of the answer, not the opening
// role-only chunk.
func hasContent(c openai.ChatCompletionChunk) bool {
	for _, ch := range c.Choices {
		if ch.Delta.Content != "" || len(ch.Delta.ToolCalls) > 0 || ch.FinishReason != "" {
			return true
		}
	}
	return false
}

// finished: the chunk that ends a whole answer of a request that does not
// ask for usage, every choice with its finish reason.
func finished(c openai.ChatCompletionChunk) bool {
	for _, ch := range c.Choices {
		if ch.FinishReason == "" {
			return false
		}
	}
	return len(c.Choices) > 0
}

// reportsUsage: the chunk a stream with include_usage ends with, after every
// finish reason: no choices, and the usage of the whole request.
func reportsUsage(c openai.ChatCompletionChunk) bool {
	return len(c.Choices) == 0 && c.JSON.Usage.Valid()
}

func chunkUsage(c openai.ChatCompletionChunk) (pgw.Usage, bool) {
	u := c.Usage
	return pgw.Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}, u.TotalTokens > 0
}
