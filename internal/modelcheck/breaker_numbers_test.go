package modelcheck

import (
	"context"
	"fmt"
	"slices"
)

// numbering places each gate's generations and tokens in the sequence of
// the record that handed them out, so that the two gates compare by place,
// not by value: the memory gate numbers a record from 0 up, the Redis gate
// from the server's clock (gate/redis, lua/common.lua next_number). A
// record is one source in one TTL epoch, named by memName. Placing a number
// also checks it: a number not seen before must be above every number its
// record handed out before ("Generations" in package gate: generations and
// tokens are drawn from one growing counter), and a Redis number other than
// 0 above every number the source's earlier, forgotten records handed out.
type numbering struct {
	mem, red map[string][]uint64 // by memName, ascending
	redEver  map[string]uint64   // by source: the largest Redis number seen
}

func newNumbering() *numbering {
	return &numbering{mem: map[string][]uint64{}, red: map[string][]uint64{}, redEver: map[string]uint64{}}
}

// place places the numbers each gate just answered for source, in the
// order handed out, and returns what breaks the rules above.
func (w *breakerWorld) place(source string, mem, red []uint64) []string {
	key := w.memName(source)
	var bad []string
	add := func(who string, seq map[string][]uint64, v uint64, ever *uint64) {
		s := seq[key]
		if slices.Contains(s, v) {
			return
		}
		switch {
		case len(s) > 0 && v < s[len(s)-1]:
			bad = append(bad, fmt.Sprintf("contract (%s): %q handed out %d after %d: generations and tokens only grow", who, source, v, s[len(s)-1]))
		case ever != nil && v != 0 && v <= *ever:
			bad = append(bad, fmt.Sprintf("redis: %q handed out %d, not above %d, a number of the record it forgot", source, v, *ever))
		}
		seq[key] = append(s, v)
		slices.Sort(seq[key])
		if ever != nil {
			*ever = max(*ever, v)
		}
	}
	for _, v := range mem {
		add("memory", w.nums.mem, v, nil)
	}
	ever := w.nums.redEver[source]
	for _, v := range red {
		add("redis", w.nums.red, v, &ever)
	}
	w.nums.redEver[source] = ever
	return bad
}

// rank is v's place among the numbers of source's current record in one
// gate's sequence, or -1 when v was never placed.
func (w *breakerWorld) rank(seq map[string][]uint64, source string, v uint64) int {
	return slices.Index(seq[w.memName(source)], v)
}

// redisToken is the Redis token that stands where memory token tok stands
// for source's current record: the Redis number of the same place, or, for
// a number the memory record never handed out, one the Redis record has
// not handed out either. It first places both records' current
// generations, so that a record nothing has read yet (a fresh one at
// generation 0) is placed too.
func (w *breakerWorld) redisToken(source string, tok uint64) (uint64, []string) {
	ctx := context.Background()
	ms, merr := w.mem.Snapshot(ctx, w.memName(source))
	rs, rerr := w.red.Snapshot(ctx, source)
	if merr != nil || rerr != nil {
		return 0, []string{fmt.Sprintf("Snapshot error: memory %v, redis %v", merr, rerr)}
	}
	bad := w.place(source, []uint64{ms.Generation}, []uint64{rs.Generation})
	key := w.memName(source)
	if i := w.rank(w.nums.mem, source, tok); i >= 0 && i < len(w.nums.red[key]) {
		return w.nums.red[key][i], bad
	}
	var last uint64
	if s := w.nums.red[key]; len(s) > 0 {
		last = s[len(s)-1]
	}
	return last + 1 + tok, bad
}

// forgottenToken stands, in the memory gate, for the token of a decision
// granted by an earlier record of the same source (before its Redis keys
// expired; the memory gate moved the source to a fresh name): a number the
// fresh record will never hand out, since the Redis record built after the
// expiry never repeats one of the forgotten record. Token 0, a fresh Closed
// record's generation, is the exception on both sides.
const forgottenToken = uint64(1) << 62
