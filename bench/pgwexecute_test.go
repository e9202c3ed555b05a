package bench

import (
	"context"
	"testing"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
)

// pgwExecute is pgw's execute-style contender. Until package breaker lands
// it is the memory gate driven the way Execute drives it (TryEnter, run the
// function, Record).
var pgwExecute = contender{"pgw", func(b *testing.B, open bool) func() error {
	g, err := memory.NewBreaker(gate.Policy{Cooldown: longCooldown})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if open {
		d, _ := g.TryEnter(ctx, source)
		if _, err := g.Record(ctx, source, d, gate.Fatal); err != nil {
			b.Fatal(err)
		}
	}
	fn := func(context.Context) error { return nil }
	return func() error {
		d, err := g.TryEnter(ctx, source)
		if err != nil {
			return err
		}
		if !d.Allowed {
			return errRejected
		}
		o := gate.Success
		if err := fn(ctx); err != nil {
			o = gate.Failure
		}
		_, err = g.Record(ctx, source, d, o)
		return err
	}
}}
