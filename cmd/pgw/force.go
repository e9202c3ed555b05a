package main

import (
	"context"
	"fmt"
	"io"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// force applies an operator's override through the gate's Forcer and prints
// the state before and after.
func (st *store) force(ctx context.Context, w io.Writer, scope, source string, f gate.Force, create bool) error {
	if !create {
		known, err := st.known(ctx, scope, source)
		if err != nil {
			return err
		}
		if !known {
			return &usageError{fmt.Sprintf("no pgw state for %s/%s under prefix %q and no such configured source: check the names (pgw status lists them), or pass -create to force it anyway",
				scope, source, st.prefix)}
		}
	}
	b, err := st.breaker(scope)
	if err != nil {
		return err
	}
	before, err := b.Snapshot(ctx, source)
	if err != nil {
		return err
	}
	if err := b.Force(ctx, source, f); err != nil {
		return err
	}
	after, err := b.Snapshot(ctx, source)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s/%s: %s → %s\n", scope, source, describe(before), describe(after))
	return nil
}

// known reports whether the source is configured or has a key in Redis —
// any key status would list it for: a healthy source of a gateway with no
// quotas may have only its advertised budget's.
func (st *store) known(ctx context.Context, scope, source string) (bool, error) {
	if _, ok := st.limits(scope, source); ok {
		return true, nil
	}
	b, err := st.breaker(scope)
	if err != nil {
		return false, err
	}
	bud, err := redis.NewBudget(st.c, scope, redis.WithPrefix(st.prefix))
	if err != nil {
		return false, err
	}
	keys := append(b.Keys(source), st.quotaKeys(scope, source)...)
	for _, k := range append(keys, bud.Key(source)) {
		// One EXISTS per key: the five keys share a slot, but a cluster
		// client still wants them sent one by one to be safe.
		n, err := st.c.Exists(ctx, k).Result()
		if err != nil {
			return false, fmt.Errorf("looking for %s: %w", k, err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

func describe(s gate.Snapshot) string {
	switch s.Forced {
	case gate.ForceOpen:
		return "open (forced until reset)"
	case gate.ForceClosed:
		return "closed (forced until reset)"
	}
	return s.State.String()
}
