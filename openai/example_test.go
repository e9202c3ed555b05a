package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// A streamed chat completion read chunk by chunk. Here the upstream is
// pgw's in-process fake; a real one is a base URL such as
// "https://api.openai.com/v1" with an API key.
func ExampleClient_ChatStream() {
	up, stop := testutil.StartUpstream()
	defer stop()
	up.Enqueue(testutil.Chat, testutil.Reply{Chunks: []string{"Hello", ", ", "world"}})

	client := openai.New()
	src := transport.Source{Name: "local", BaseURL: up.URL, Model: "any-model"}
	st, err := client.ChatStream(context.Background(), src, transport.ChatRequest{
		Messages: []transport.Message{{Role: "user", Content: "Greet me."}},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer st.Close()
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Print(chunk.Delta)
		if chunk.Usage != nil {
			fmt.Printf("\n%d tokens", chunk.Usage.TotalTokens)
		}
	}
	fmt.Println()
	// Output:
	// Hello, world
	// 5 tokens
}
