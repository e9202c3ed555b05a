package bench

import (
	"context"
	"testing"
)

func BenchmarkScratchNoop(b *testing.B) {
	noop := func(context.Context) error { return nil }
	for _, c := range overheadContenders {
		b.Run(c.name, func(b *testing.B) {
			u := newRawUpstream(b)
			call := c.make(b, noop, u)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
