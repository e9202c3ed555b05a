package redis

import (
	"context"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// scriptConclude is Record and Finish in one script (lua/conclude.lua):
// Record's prelude and body wrapped in a function for whatever its fast
// path does not decide, after the quota's prelude.
var scriptConclude = goredis.NewScript(lua("clock.lua", "quota_common.lua") +
	body("record_body", "common.lua", "record.lua") + mustRead("lua/conclude.lua"))

var _ gate.Concluder = (*Quota)(nil)

// conclusionCall is one conclusion rendered as a script call.
type conclusionCall struct {
	i    int // index in the batch
	keys []string
	args []any
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
		cmds[0] = runScript(ctx, q.c, scriptConclude, calls[0].keys, calls[0].args...)
	} else {
		pipe := q.c.Pipeline()
		for j, k := range calls {
			cmds[j] = scriptConclude.EvalSha(ctx, pipe, k.keys, k.args...)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for j, k := range calls {
			if err := cmds[j].Err(); goredis.HasErrorPrefix(err, "NOSCRIPT") || notServed(err) {
				cmds[j] = runScript(ctx, q.c, scriptConclude, k.keys, k.args...)
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

// conclusionCall renders c as conclude.lua's keys and arguments.
func (q *Quota) conclusionCall(rb *Breaker, i int, c *gate.Conclusion) conclusionCall {
	d := c.Decision
	args := make([]any, 0, len(rb.policy)+9)
	args = append(args, rb.policy...)
	args = append(args, strconv.Itoa(int(c.Outcome)), flag(d.Allowed), flag(d.Probe), strconv.FormatUint(d.Token, 10))
	delta, id := "", ""
	s := q.sources[c.Source]
	if c.HasPermit && s != nil {
		p := c.Permit
		if s.limits.TPM != 0 && c.Tokens >= 0 && c.Tokens != p.Tokens {
			delta = strconv.FormatInt(s.tpmDelta(p, c.Tokens), 10)
		}
		if p.ID != "" && s.limits.MaxInFlight != 0 {
			id = p.ID
		}
	}
	if s != nil {
		args = append(args, s.tpm...)
	} else {
		args = append(args, "0", "0", "0")
	}
	args = append(args, delta, id)
	pre := rb.prefix + c.Source + "}:"
	keys := []string{pre + "cb", pre + "probes", pre + "quota", pre + "inflight"}
	return conclusionCall{i: i, keys: keys, args: args}
}

// recordReply reads a Record-shaped reply: applied, state, RetryAfter µs,
// generation, override. Errors are returned as they are, unwrapped.
func recordReply(op, source string, cmd *goredis.Cmd) (gate.Update, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return gate.Update{}, err
	}
	if len(v) != 5 {
		return gate.Update{}, replyError(op, source, v, 5)
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
