package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/pgw-go/pgw/breaker"
	"github.com/pgw-go/pgw/gate"
)

// pgwExecute is pgw's execute-style contender: package breaker's Execute on
// its default memory gate.
var pgwExecute = contender{"pgw", func(b *testing.B, open bool) func() error {
	cb, err := breaker.New(source, breaker.Config{
		Policy: gate.Policy{Cooldown: longCooldown},
		Logger: discardLogger,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if open {
		_ = cb.Execute(ctx, func(context.Context) error { return breaker.Fatal(errUpstream) })
		var oe *breaker.OpenError
		if err := cb.Execute(ctx, func(context.Context) error { return nil }); !errors.As(err, &oe) {
			b.Fatalf("breaker not open after a fatal error: %v", err)
		}
	}
	fn := func(context.Context) error { return nil }
	return func() error { return cb.Execute(ctx, fn) }
}}
