package redis

import (
	"context"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// scriptConclude is Record and Finish in one script (lua/conclude.lua):
// Record's prelude and body wrapped in a function for whatever its fast
// path does not decide, after the quota's prelude.
var (
	scriptConcludeSrc = lua("clock.lua", "fast.lua", "quota_common.lua") +
		body("record_body", "common.lua", "record.lua") + mustRead("lua/conclude.lua")
	scriptConclude = newLua(scriptConcludeSrc)
)

var _ gate.Concluder = (*Quota)(nil)

// conclusionCall is one conclusion rendered as a script call.
type conclusionCall struct {
	i    int   // index in the batch
	args []any // the EVALSHA command's (runArgs)
}

// Conclude gives each admission of cs back — b's Record and this gate's
// Finish — in one script per admission (gate.Concluder), all in one pipeline:
// one round trip for the batch on a single node, one per node involved on a
// cluster. A script the server lost (NOSCRIPT) or a slot it cannot serve
// now is run again on its own (runScript). It combines with a *Breaker on
// the same prefix and scope; ok is false for any other breaker.
func (q *Quota) Conclude(ctx context.Context, b gate.ProviderGate, cs []gate.Conclusion) bool {
	rb, isRedis := b.(*Breaker)
	if !isRedis || rb.prefix != q.prefix {
		return false
	}
	calls := make([]conclusionCall, 0, len(cs))
	for i := range cs {
		c := &cs[i]
		c.Update, c.Err = gate.Update{}, nil
		if !c.Outcome.Valid() {
			c.Err = gate.ErrUnknownOutcome
			continue
		}
		calls = append(calls, q.conclusionCall(rb, i, c))
	}
	if len(calls) == 0 {
		return true
	}
	cmds := make([]*goredis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = runArgs(ctx, q.c, scriptConcludeSrc, calls[0].args)
	} else {
		pipe := q.c.Pipeline()
		for j, k := range calls {
			cmds[j] = goredis.NewCmd(ctx, k.args...)
			_ = pipe.Process(ctx, once{cmds[j]})
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for j, k := range calls {
			if err := cmds[j].Err(); err != nil && (goredis.HasErrorPrefix(err, "NOSCRIPT") || notServedNow(err)) {
				cmds[j] = runArgs(ctx, q.c, scriptConcludeSrc, k.args)
			}
		}
	}
	for j, k := range calls {
		c := &cs[k.i]
		if err := cmds[j].Err(); err != nil {
			c.Err = wrapErr(ctx, "Conclude", c.Source, err)
			continue
		}
		c.Update, c.Err = recordReply("Conclude", c.Source, cmds[j])
	}
	return true
}

// outcomeArgs are the Outcome values as conclude.lua's argument, in Go
// constants so that passing them allocates nothing.
var outcomeArgs = [...]string{gate.Success: "1", gate.Failure: "2", gate.Fatal: "3", gate.Released: "4"}

// conclusionCall renders c as conclude.lua's command.
func (q *Quota) conclusionCall(rb *Breaker, i int, c *gate.Conclusion) conclusionCall {
	d := c.Decision
	var head, tpm []any
	delta, id := "", ""
	s := q.sources[c.Source]
	if s != nil {
		head, tpm = s.concludeHead(rb), s.tpm
		if c.HasPermit {
			p := c.Permit
			if s.limits.TPM != 0 && c.Tokens >= 0 && c.Tokens != p.Tokens {
				delta = strconv.FormatInt(s.tpmDelta(p, c.Tokens), 10)
			}
			if p.ID != "" && s.limits.MaxInFlight != 0 {
				id = p.ID
			}
		}
	} else {
		head, tpm = newConcludeHead(rb, q.admitKeys(c.Source)[:4]), noLimits[:3]
	}
	args := make([]any, len(head), len(head)+9)
	copy(args, head)
	args = append(args, outcomeArgs[c.Outcome], flag(d.Allowed), flag(d.Probe), d.Token)
	args = append(args, tpm...)
	args = append(args, delta, id)
	return conclusionCall{i: i, args: args}
}

// concludeHead returns s's conclude.lua command up to the conclusion's own
// arguments for rb: "evalsha", the hash, the number of keys, the four keys
// and the policy, built once.
func (s *quotaSource) concludeHead(rb *Breaker) []any {
	h := s.conclude.Load()
	if h == nil || h.rb != rb {
		h = &admitHeads{rb: rb, heads: [2][]any{newConcludeHead(rb, s.admitKeys[:4])}}
		s.conclude.Store(h)
	}
	return h.heads[0]
}

func newConcludeHead(rb *Breaker, keys []string) []any {
	head := make([]any, 0, 3+len(keys)+len(rb.policy))
	head = append(head, "evalsha", scriptConclude.Hash(), len(keys))
	for _, k := range keys {
		head = append(head, k)
	}
	return append(head, rb.policy...)
}

// recordReply reads a Record-shaped reply: applied, state, RetryAfter µs,
// generation, override. Errors are returned as they are, unwrapped.
func recordReply(op, source string, cmd *goredis.Cmd) (gate.Update, error) {
	var v [5]int64
	if err := ints(cmd, v[:]); err != nil {
		if _, bad := err.(*replyShapeError); bad {
			return gate.Update{}, fmt.Errorf("pgw/gate/redis: %s %q: %w", op, source, err)
		}
		return gate.Update{}, err
	}
	st, err := state(op, source, v[1])
	if err != nil {
		return gate.Update{}, err
	}
	return gate.Update{
		Applied:    v[0] == 1,
		State:      st,
		RetryAfter: micros(v[2]),
		Generation: uint64(v[3]),
		Forced:     gate.Force(v[4]),
	}, nil
}
