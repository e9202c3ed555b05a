package admission

import (
	"cmp"
	"slices"
)

// Source is what admission needs to know about one source of a scope.
type Source struct {
	// Name identifies the source in the gates, the memo and errors.
	Name string
	// Weight is the source's share of first picks within its priority tier
	// (0 means 1).
	Weight int
	// Priority orders the tiers: lower first. A tier is tried only after
	// every source of the tiers before it was rejected.
	Priority int
}

// maxStackSources is how many sources an ordering handles without allocating.
const maxStackSources = 16

// selector orders a scope's sources for one Pick round.
type selector struct {
	// sources sorted by Priority, stable (configuration order within a tier).
	sources []Source
	// tiers[i] is the end index in sources of tier i.
	tiers []int
	rand  func() float64
	// lat, when set, picks the first source of each tier by the power of
	// two choices (BalanceLatency); nil draws by weight alone.
	lat *Latency
}

func newSelector(sources []Source, rand func() float64) selector {
	s := selector{sources: slices.Clone(sources), rand: rand}
	for i := range s.sources {
		if s.sources[i].Weight == 0 {
			s.sources[i].Weight = 1
		}
	}
	slices.SortStableFunc(s.sources, func(a, b Source) int { return cmp.Compare(a.Priority, b.Priority) })
	for i := 1; i <= len(s.sources); i++ {
		if i == len(s.sources) || s.sources[i].Priority != s.sources[i-1].Priority {
			s.tiers = append(s.tiers, i)
		}
	}
	return s
}

// order appends to buf the indexes of s.sources in the order one Pick round
// tries them: tiers by ascending priority, a weighted random permutation
// within each tier (a source is first with probability weight/tier total),
// then every source with an entry in fails moved to the end, fewest failures
// first. fails may be nil.
func (s *selector) order(buf []int, fails map[string]int) []int {
	it := s.iter(buf, fails)
	for {
		if _, ok := it.next(); !ok {
			return it.idx
		}
	}
}

// iter starts an ordering that is drawn lazily: without demotions, each
// position of a tier is drawn only when the round gets to it, so the usual
// round, won by its first source, costs one random draw. With demotions the
// whole order is drawn at once, since the failed sources must be found.
func (s *selector) iter(buf []int, fails map[string]int) orderIter {
	for i := range s.sources {
		buf = append(buf, i)
	}
	it := orderIter{s: s, idx: buf}
	if len(fails) == 0 {
		return it
	}
	lo := 0
	for _, hi := range s.tiers {
		s.drawFirst(buf[lo:hi])
		s.shuffle(buf[lo+1 : hi])
		lo = hi
	}
	failed := func(i int) int { return fails[s.sources[i].Name] }
	// Stable: keep the tier/weight order among the healthy and among sources
	// with equal failure counts.
	slices.SortStableFunc(buf, func(a, b int) int { return cmp.Compare(failed(a), failed(b)) })
	it.drawn = true
	return it
}

// orderIter yields the indexes of one round's order.
type orderIter struct {
	s     *selector
	idx   []int
	pos   int
	tier  int  // index into s.tiers of the tier holding pos
	drawn bool // idx is already in final order
}

func (it *orderIter) next() (int, bool) {
	if it.pos >= len(it.idx) {
		return 0, false
	}
	if !it.drawn {
		for it.s.tiers[it.tier] <= it.pos {
			it.tier++
		}
		if it.tier == 0 && it.pos == 0 || it.tier > 0 && it.pos == it.s.tiers[it.tier-1] {
			it.s.drawFirst(it.idx[it.pos:it.s.tiers[it.tier]])
		} else {
			it.s.draw(it.idx[it.pos:it.s.tiers[it.tier]])
		}
	}
	i := it.idx[it.pos]
	it.pos++
	return i, true
}

// shuffle permutes idx in place by weighted sampling without replacement.
func (s *selector) shuffle(idx []int) {
	for pos := 0; pos < len(idx)-1; pos++ {
		s.draw(idx[pos:])
	}
}

// draw moves to idx[0] a weighted random choice among idx.
func (s *selector) draw(idx []int) {
	if len(idx) < 2 {
		return
	}
	total := 0
	for _, i := range idx {
		total += s.sources[i].Weight
	}
	x := s.rand() * float64(total)
	pick := len(idx) - 1
	acc := 0.0
	for j, i := range idx {
		acc += float64(s.sources[i].Weight)
		if x < acc {
			pick = j
			break
		}
	}
	idx[0], idx[pick] = idx[pick], idx[0]
}

// drawFirst moves to idx[0] the source a tier tries first: a weighted draw,
// or with the latency balance the lower-load of two distinct weighted draws
// (a tie keeps the first draw).
func (s *selector) drawFirst(idx []int) {
	s.draw(idx)
	if s.lat == nil || len(idx) < 2 {
		return
	}
	s.draw(idx[1:])
	now := s.lat.clock.Now()
	if s.lat.load(idx[1], now) < s.lat.load(idx[0], now) {
		idx[0], idx[1] = idx[1], idx[0]
	}
}
