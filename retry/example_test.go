package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// A governed call on a custom scope: the preferred source answers 503, the
// call backs off and — with in-call demotion — fails over to the backup.
func ExampleRun() {
	breaker, _ := memory.NewBreaker(gate.Policy{})
	loop, err := retry.New(retry.Config{
		Scope: config.ScopeSettings{
			Name:    "MYSCOPE",
			Sources: []config.Source{{Name: "primary"}, {Name: "backup", Priority: 1}},
		},
		Breaker: breaker,
		Demote:  true,
		Sleep:   func(context.Context, time.Duration) error { return nil }, // no real backoff in the example
	})
	if err != nil {
		panic(err)
	}
	answer, err := retry.Run(context.Background(), loop, 0,
		func(ctx context.Context, src config.Source) (string, transport.Usage, error) {
			if src.Name == "primary" {
				return "", transport.Usage{}, &transport.HTTPError{StatusCode: 503, Message: "overloaded"}
			}
			return "answered by " + src.Name, transport.Usage{}, nil
		})
	fmt.Println(answer, err)
	// Output: answered by backup <nil>
}
