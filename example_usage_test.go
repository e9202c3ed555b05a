package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// ChatStream returns once the first chunk has arrived (until then the call
// retries and fails over); read the rest with Recv until io.EOF, and Close
// the stream when you stop early — it holds its source's admission until it
// ends.
func ExampleGatewayClient_ChatStream() {
	up, stop := testutil.StartUpstream()
	defer stop()
	settings, _ := config.FromMap(map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "main", "CHAT__MAIN__BASE_URL": up.URL})
	ctx := context.Background()
	gw, err := pgw.New(ctx, *settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	st, err := gw.ChatStream(ctx, pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	var answer strings.Builder
	for {
		chunk, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("cut:", err) // a failure after the first chunk is not retried
			return
		}
		answer.WriteString(chunk.Delta)
	}
	fmt.Printf("%s (from %s)\n", answer.String(), st.Source())
	// Output: Hello from the fake upstream. (from main)
}

// Embed splits large inputs into sub-batches of BATCH_SIZE, each its own
// governed call. When some fail, the vectors of the others are returned
// with a *pgw.BatchError that says which inputs failed and why.
func ExampleGatewayClient_Embed() {
	up, stop := testutil.StartUpstream()
	defer stop()
	// The second request is answered 400 — a caller error, not retried.
	up.Enqueue(testutil.Embeddings, testutil.Reply{}, testutil.Reply{Status: 400, Message: "input too long"})
	settings, _ := config.FromMap(map[string]string{
		"PGW_SCOPES": "EMBEDDING", "EMBEDDING__SOURCES": "main",
		"EMBEDDING__MAIN__BASE_URL": up.URL, "EMBEDDING__MAIN__BATCH_SIZE": "2",
	})
	ctx := context.Background()
	gw, err := pgw.New(ctx, *settings, pgw.WithConcurrency(1)) // sub-batches in order, for a stable output
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	resp, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"a", "b", "c", "d"}})
	var be *pgw.BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			var he *pgw.HTTPError
			if errors.As(f.Err, &he) {
				fmt.Printf("inputs [%d,%d) failed: http %d\n", f.Start, f.End, he.StatusCode)
			}
		}
	}
	for i, v := range resp.Vectors {
		fmt.Printf("input %d: %d dimensions\n", i, len(v))
	}
	// Output:
	// inputs [2,4) failed: http 400
	// input 0: 8 dimensions
	// input 1: 8 dimensions
	// input 2: 0 dimensions
	// input 3: 0 dimensions
}

// The errors that end a call are types of this package: branch on them with
// errors.As (or on their Code()), never on messages. Here a bad key opens
// the only source's breaker.
func Example_errorsAs() {
	up, stop := testutil.StartUpstream()
	defer stop()
	up.RequireAPIKey("sk-right")
	settings, _ := config.FromMap(map[string]string{
		"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "main", "CHAT__MAIN__BASE_URL": up.URL, "CHAT__MAIN__API_KEY": "sk-wrong",
	})
	ctx := context.Background()
	gw, err := pgw.New(ctx, *settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	_, err = gw.Chat(ctx, pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}})
	var (
		open      *pgw.CircuitOpenError
		exhausted *pgw.AllSourcesExhausted
		gone      *pgw.GatewayUnavailableError
		upstream  *pgw.HTTPError
		cfg       *pgw.ConfigError
	)
	switch {
	case errors.As(err, &open):
		fmt.Printf("circuit open on %v; re-submit in about %v\n", open.Sources, open.RetryAfter.Round(10e9))
		if errors.As(err, &upstream) {
			fmt.Printf("because source %s answered %d\n", upstream.Source, upstream.StatusCode)
		}
	case errors.As(err, &exhausted):
		fmt.Println("no source could run:", exhausted.Reason, exhausted.Reasons)
	case errors.As(err, &gone):
		fmt.Println("every attempt failed:", gone.Attempts)
	case errors.As(err, &upstream):
		fmt.Println("the upstream refused the request:", upstream.StatusCode)
	case errors.As(err, &cfg):
		fmt.Println("fix the configuration:", cfg.Problems)
	case err != nil:
		fmt.Println("other:", err)
	}
	// Output:
	// circuit open on [main]; re-submit in about 1m0s
	// because source main answered 401
}
