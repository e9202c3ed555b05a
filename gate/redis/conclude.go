package redis

import (
	"context"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// scriptConclude is Record and Finish in one script (lua/conclude.lua):
// first the common case decided on its own (lua/conclude_fast.lua), then
// Record's prelude and body wrapped in a function for whatever its fast
// path does not decide, after the quota's prelude. One call concludes one
// admission, or a run of one source's Successes and Releaseds: what the
// writer sends for outcomes that queued up together, one command for the
// run instead of one per outcome. Runs and lone conclusions share the one
// script, so that a server that lost its scripts refuses both alike and a
// source's outcomes are run again in their order (Conclude).
var (
	scriptConcludeSrc = mustRead("lua/conclude_fast.lua") + lua("clock.lua", "fast.lua", "quota_common.lua") +
		body("record_body", "common.lua", "record.lua") + mustRead("lua/conclude.lua")
	scriptConclude = newLua(scriptConcludeSrc)
)

// maxRun bounds how many outcomes one conclude.lua call carries.
const maxRun = 64

var _ gate.Concluder = (*Quota)(nil)

// conclusionCall is one conclusion, or a run of them, rendered as a script
// call.
type conclusionCall struct {
	i    int    // index in the batch (a run's first)
	more []int  // a run's further conclusions, in order
	args []any  // the EVALSHA command's (runArgs)
	src  string // the script's source, for the EVAL after a NOSCRIPT
}

// Conclude gives each admission of cs back — b's Record and this gate's
// Finish — in one script per admission (gate.Concluder), all in one pipeline:
// one round trip for the batch on a single node, one per node involved on a
// cluster. Several Successes or Releaseds of one source's admissions (not
// probes) go as one script, a run, which concludes each in order as its own
// script would: such outcomes cannot move the breaker, and a run costs
// Redis one command, one read of the record and one write of the quota
// for all of them. A script the server lost (NOSCRIPT) or a slot it cannot serve
// now is run again on its own (runScript). It combines with a *Breaker on
// the same prefix and scope; ok is false for any other breaker.
func (q *Quota) Conclude(ctx context.Context, b gate.ProviderGate, cs []gate.Conclusion) bool {
	rb, isRedis := b.(*Breaker)
	if !isRedis || rb.prefix != q.prefix {
		return false
	}
	calls := q.conclusionCalls(rb, cs)
	if len(calls) == 0 {
		return true
	}
	cmds := make([]*goredis.Cmd, len(calls))
	if len(calls) == 1 {
		cmds[0] = runArgs(ctx, q.c, calls[0].src, calls[0].args)
	} else {
		pipe := q.c.Pipeline()
		for j, k := range calls {
			cmds[j] = goredis.NewCmd(ctx, k.args...)
			_ = pipe.Process(ctx, once{cmds[j]})
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for j, k := range calls {
			if err := cmds[j].Err(); err != nil && (goredis.HasErrorPrefix(err, "NOSCRIPT") || notServedNow(err)) {
				cmds[j] = runArgs(ctx, q.c, k.src, k.args)
			}
		}
	}
	for j, k := range calls {
		if k.more != nil {
			q.runReply(ctx, cs, k, cmds[j])
			continue
		}
		c := &cs[k.i]
		if err := cmds[j].Err(); err != nil {
			c.Err = wrapErr(ctx, "Conclude", c.Source, err)
			continue
		}
		c.Update, c.Err = recordReply("Conclude", c.Source, cmds[j])
	}
	return true
}

// conclusionCalls renders cs as conclude.lua calls: a run for each
// source's Successes and Releaseds that follow one another in cs with no
// other outcome of that source between them, a call of its own for each
// other conclusion. The calls keep each source's conclusions in their
// order; an invalid outcome gets its error here and no call.
func (q *Quota) conclusionCalls(rb *Breaker, cs []gate.Conclusion) []conclusionCall {
	calls := make([]conclusionCall, 0, len(cs))
	var open map[string]int // source → its run's call, still open to more
	for i := range cs {
		c := &cs[i]
		c.Update, c.Err = gate.Update{}, nil
		if !c.Outcome.Valid() {
			c.Err = gate.ErrUnknownOutcome
			continue
		}
		if !q.runnable(c) {
			delete(open, c.Source)
			calls = append(calls, q.conclusionCall(rb, i, c))
			continue
		}
		if j, ok := open[c.Source]; ok && len(calls[j].more) < maxRun-1 {
			calls[j].more = append(calls[j].more, i)
			continue
		}
		if open == nil {
			open = make(map[string]int)
		}
		open[c.Source] = len(calls)
		calls = append(calls, conclusionCall{i: i})
	}
	for j := range calls {
		k := &calls[j]
		switch {
		case k.args != nil:
		case k.more == nil: // a run of one
			*k = q.conclusionCall(rb, k.i, &cs[k.i])
		default:
			k.args, k.src = q.runArgs(rb, cs, k), scriptConcludeSrc
		}
	}
	return calls
}

// runnable reports whether c may be part of a run: a Success or Released of
// an allowed admission that was not a probe, of a source with limits.
func (q *Quota) runnable(c *gate.Conclusion) bool {
	return (c.Outcome == gate.Success || c.Outcome == gate.Released) &&
		c.Decision.Allowed && !c.Decision.Probe && q.sources[c.Source] != nil
}

// runArgs renders a run as conclude.lua's command.
func (q *Quota) runArgs(rb *Breaker, cs []gate.Conclusion, k *conclusionCall) []any {
	c0 := &cs[k.i]
	s := q.sources[c0.Source]
	head := s.concludeHead(rb)
	args := make([]any, len(head), len(head)+3+6*(1+len(k.more)))
	copy(args, head)
	args = append(args, s.tpm...)
	args = s.appendConclusion(args, c0)
	for _, i := range k.more {
		args = s.appendConclusion(args, &cs[i])
	}
	return args
}

// runReply hands each conclusion of a run its part of cmd's reply, or the
// run's error.
func (q *Quota) runReply(ctx context.Context, cs []gate.Conclusion, k conclusionCall, cmd *goredis.Cmd) {
	n := 1 + len(k.more)
	each := func(f func(c *gate.Conclusion, at int)) {
		f(&cs[k.i], 0)
		for j, i := range k.more {
			f(&cs[i], j+1)
		}
	}
	if err := cmd.Err(); err != nil {
		each(func(c *gate.Conclusion, _ int) { c.Err = wrapErr(ctx, "Conclude", c.Source, err) })
		return
	}
	v := make([]int64, 5*n)
	if err := ints(cmd, v); err != nil {
		err = fmt.Errorf("pgw/gate/redis: Conclude %q: %w", cs[k.i].Source, err)
		each(func(c *gate.Conclusion, _ int) { c.Err = err })
		return
	}
	each(func(c *gate.Conclusion, at int) {
		c.Update, c.Err = recordUpdate("Conclude", c.Source, v[5*at:5*at+5])
	})
}

// outcomeArgs are the Outcome values as conclude.lua's argument, in Go
// constants so that passing them allocates nothing.
var outcomeArgs = [...]string{gate.Success: "1", gate.Failure: "2", gate.Fatal: "3", gate.Released: "4"}

// conclusionCall renders c as conclude.lua's command, a conclusion alone.
func (q *Quota) conclusionCall(rb *Breaker, i int, c *gate.Conclusion) conclusionCall {
	s := q.sources[c.Source]
	var head, tpm []any
	if s != nil {
		head, tpm = s.concludeHead(rb), s.tpm
	} else {
		head, tpm = newConcludeHead(rb, q.admitKeys(c.Source)[:4]), noLimits[:3]
	}
	args := make([]any, len(head), len(head)+9)
	copy(args, head)
	args = append(args, tpm...)
	args = s.appendConclusion(args, c)
	return conclusionCall{i: i, args: args, src: scriptConcludeSrc}
}

// appendConclusion appends c's six arguments of conclude.lua to args: the
// outcome, the decision's allowed, probe and token, and what c gives back
// (giveBack; nothing when s is nil, a source without limits).
func (s *quotaSource) appendConclusion(args []any, c *gate.Conclusion) []any {
	d := c.Decision
	delta, id := "", ""
	if s != nil {
		delta, id = s.giveBack(c)
	}
	return append(args, outcomeArgs[c.Outcome], flag(d.Allowed), flag(d.Probe), d.Token, delta, id)
}

// giveBack is what c gives back to s's quota, as the scripts' arguments:
// the TPM correction in tokens ("": none to make) and the in-flight lease
// to free ("": none).
func (s *quotaSource) giveBack(c *gate.Conclusion) (delta, id string) {
	if !c.HasPermit {
		return "", ""
	}
	p := c.Permit
	if s.limits.TPM != 0 && c.Tokens >= 0 && c.Tokens != p.Tokens {
		delta = strconv.FormatInt(s.tpmDelta(p, c.Tokens), 10)
	}
	if p.ID != "" && s.limits.MaxInFlight != 0 {
		id = p.ID
	}
	return delta, id
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
	return newScriptHead(scriptConclude, rb, keys)
}

// newScriptHead is a breaker-and-quota script's command up to its own
// arguments: "evalsha", the hash, the number of keys, the keys and the
// policy.
func newScriptHead(sc *script, rb *Breaker, keys []string) []any {
	head := make([]any, 0, 3+len(keys)+len(rb.policy))
	head = append(head, "evalsha", sc.Hash(), len(keys))
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
	return recordUpdate(op, source, v[:])
}

// recordUpdate is the Update of a Record-shaped reply's five integers.
func recordUpdate(op, source string, v []int64) (gate.Update, error) {
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
