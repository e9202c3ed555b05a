package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
)

// The usual start: settings from the environment, one gateway per process.
// Here the environment points at an in-process fake upstream; in production
// it points at real providers.
func ExampleNewFromEnv() {
	up, stop := testutil.StartUpstream()
	defer stop()
	env := map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": up.URL,
		"CHAT__PRIMARY__API_KEY":  "sk-example",
		"CHAT__BACKUP__BASE_URL":  up.URL,
		"CHAT__BACKUP__PRIORITY":  "1", // tried only when primary cannot run
	}
	for k, v := range env {
		os.Setenv(k, v)
		defer os.Unsetenv(k)
	}

	ctx := context.Background()
	gw, err := pgw.NewFromEnv(ctx)
	if err != nil {
		fmt.Println(err) // a *pgw.ConfigError lists every bad key at once
		return
	}
	defer gw.Close()

	resp, err := gw.Chat(ctx, pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (from %s)\n", resp.Content, resp.Source)
	// Output: Hello from the fake upstream. (from primary)
}

// Call governs any function — here a reranker that has no typed method — in
// a scope of its own. Returning *pgw.HTTPError lets the gateway classify the
// failure: the 503 of the first source is a failure, the call fails over.
func ExampleCall() {
	settings, err := config.FromMap(map[string]string{
		"PGW_SCOPES":                "RERANK",
		"RERANK__SOURCES":           "fast,slow",
		"RERANK__CIRCUIT_OPEN":      "fail_fast",
		"RERANK__SLOW__PRIORITY":    "1",
		"RERANK__FAST__TIMEOUT_S":   "0.5",
		"RERANK__SLOW__TIMEOUT_S":   "5",
		"RERANK__FAILURE_THRESHOLD": "3",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	gw, err := pgw.New(ctx, *settings, pgw.WithBackoff(pgw.Backoff{Base: 1, Max: 1}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	ranked, err := pgw.Call(ctx, gw, "RERANK", func(ctx context.Context, src pgw.Source) ([]int, pgw.Usage, error) {
		if src.Name == "fast" {
			return nil, pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusServiceUnavailable, Message: "overloaded"}
		}
		return []int{2, 0, 1}, pgw.Usage{TotalTokens: 42}, nil
	})
	fmt.Println(ranked, err)

	// A scope that is not configured is named with the ones that are.
	_, err = pgw.Call(ctx, gw, "SEARCH", func(context.Context, pgw.Source) (int, pgw.Usage, error) { return 0, pgw.Usage{}, nil })
	var use *pgw.UnknownScopeError
	fmt.Println(errors.As(err, &use), use.Configured)
	// Output:
	// [2 0 1] <nil>
	// true [RERANK]
}
