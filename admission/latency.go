package admission

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Balance is how a round picks the first source to try within a priority
// tier ({SCOPE}__BALANCE).
type Balance string

// The Balance values.
const (
	// BalanceWeighted draws the first source of a tier at random in
	// proportion to the sources' weights (the default).
	BalanceWeighted Balance = "weighted"
	// BalanceLatency draws two distinct sources of the tier by weight and
	// tries first the one with the lower load: its peak-EWMA latency times
	// its attempts in flight plus one (power of two choices).
	BalanceLatency Balance = "latency"
)

// DefaultBalance is the Balance when none is set.
const DefaultBalance = BalanceWeighted

// DefaultLatencyDecay is the time constant of a source's peak-EWMA when
// Config.LatencyDecay is 0: an old observation's weight falls by e every
// 10 s, and so does the cost of a source that is not called, so that a
// source that was slow once is tried again after a while.
const DefaultLatencyDecay = 10 * time.Second

// latencySamples is how many recent times to first chunk a source keeps for
// its quantiles (LatencyStats.Quantile).
const latencySamples = 256

// minQuantileSamples is how many samples a quantile needs before it is
// reported.
const minQuantileSamples = 20

// unmeasuredBusyCost is the cost given to a source that has attempts in
// flight but no observation yet: high, so that a round does not pile every
// call onto a source it knows nothing about while the first ones run.
const unmeasuredBusyCost = time.Hour

// checkBalance returns the problem with b, or "".
func checkBalance(b Balance) string {
	switch b {
	case BalanceWeighted, BalanceLatency:
		return ""
	}
	return fmt.Sprintf("Balance=%q (legal: %q or %q)", b, BalanceWeighted, BalanceLatency)
}

// Latency is one process's view of how fast each source of a scope answers:
// a peak-EWMA of the time to the first chunk (to the whole answer for
// calls that do not stream), the attempts in flight, and a window of recent
// samples for quantiles (the adaptive hedge delay). It is kept per process
// on purpose: each process measures its own path to the upstream, the
// numbers change every call, and sharing them would cost a round trip per
// admission to save nothing — every process converges on its own within a
// few calls. Safe for concurrent use.
type Latency struct {
	clock gate.Clock
	tau   float64 // decay time constant, nanoseconds
	names []string
	src   []sourceLatency
}

type sourceLatency struct {
	inflight atomic.Int64

	mu       sync.Mutex
	cost     float64 // peak-EWMA, nanoseconds
	stamp    time.Time
	measured bool
	samples  [latencySamples]time.Duration
	n        int // samples held (≤ latencySamples)
	next     int // ring position of the next sample
	total    uint64
}

func newLatency(clock gate.Clock, tau time.Duration, names []string) *Latency {
	return &Latency{clock: clock, tau: float64(tau), names: names, src: make([]sourceLatency, len(names))}
}

func (l *Latency) index(source string) int {
	return slices.Index(l.names, source)
}

// Observe records that an attempt on source delivered its first chunk (or
// its answer) d after it started: it joins the source's EWMA — at once when
// d is above it (the peak), smoothed otherwise — and its samples.
func (l *Latency) Observe(source string, d time.Duration) {
	if i := l.index(source); i >= 0 {
		l.observe(i, d, true, true, l.clock.Now())
	}
}

// ObserveAt is Observe for a caller that read the latency's clock at the
// attempt's end, now, and so spares it another reading.
func (l *Latency) ObserveAt(source string, d time.Duration, now time.Time) {
	if i := l.index(source); i >= 0 {
		l.observe(i, d, true, true, now)
	}
}

// ObserveBound records that an attempt on source ran d without delivering
// and was given up (a failure, a first-token timeout, a hedge it lost): the
// source takes at least d, so its EWMA rises to d when below it, and d joins
// its samples as a lower bound of that attempt's time — the slow tail stays
// in the quantiles even when hedging cuts it short.
func (l *Latency) ObserveBound(source string, d time.Duration) {
	if i := l.index(source); i >= 0 {
		l.observe(i, d, false, true, l.clock.Now())
	}
}

// ObserveBoundAt is ObserveBound for a caller that read the latency's clock
// at the attempt's end, now.
func (l *Latency) ObserveBoundAt(source string, d time.Duration, now time.Time) {
	if i := l.index(source); i >= 0 {
		l.observe(i, d, false, true, now)
	}
}

// RaiseAt records that an attempt on source ran d without delivering, as
// ObserveBoundAt does, into its EWMA alone: d does not join its samples. It
// is for a lower bound that would read as a fast time in the quantiles — a
// failure quicker than the source's answers says nothing of how long they
// take — while its EWMA, which a bound can only raise, still hears it.
func (l *Latency) RaiseAt(source string, d time.Duration, now time.Time) {
	if i := l.index(source); i >= 0 {
		l.observe(i, d, false, false, now)
	}
}

func (l *Latency) observe(i int, d time.Duration, smooth, sample bool, now time.Time) {
	if d < 0 {
		d = 0
	}
	s := &l.src[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	// One exponential serves both the decay to now and the smoothing
	// weight: they are the same factor (the decay stops at 1 when the
	// clock did not move forward).
	var cur, w float64
	if s.measured {
		el := float64(now.Sub(s.stamp))
		w = decay(el / l.tau)
		cur = s.cost
		if el > 0 {
			cur *= w
		}
	}
	x := float64(d)
	switch {
	case !s.measured || x > cur:
		s.cost = x
	case smooth:
		s.cost = cur*w + x*(1-w)
	default:
		s.cost = cur
	}
	s.stamp, s.measured = now, true
	s.total++
	if !sample {
		return
	}
	s.samples[s.next] = d
	s.next = (s.next + 1) % latencySamples
	s.n = min(s.n+1, latencySamples)
}

// decayed is the cost at now: it decays toward 0 with time constant tau
// while no observation comes, so a source not called for a while looks
// fast again and is tried again. Called with s.mu held.
func (s *sourceLatency) decayed(now time.Time, tau float64) float64 {
	if !s.measured {
		return 0
	}
	el := float64(now.Sub(s.stamp))
	if el <= 0 {
		return s.cost
	}
	return s.cost * decay(el/tau)
}

// smallDecay bounds the arguments decay takes by its polynomial: below it
// the series' first omitted term, x⁵/120, is under 2⁻⁵⁶ of the result, less
// than the rounding of the result itself.
const smallDecay = 1.0 / 1024

// decay is e^-x. Observations a call apart are microseconds apart, a
// ten-millionth of the time constant: there four terms of the series give
// math.Exp's value for a fraction of its cost; anything longer goes to
// math.Exp.
func decay(x float64) float64 {
	if x >= 0 && x < smallDecay {
		return 1 - x*(1-x*(0.5-x*(1.0/6-x*(1.0/24))))
	}
	return math.Exp(-x)
}

// Quantile returns the q-quantile (0 < q < 1) of source's recent samples,
// and false while it has fewer than 20 of them.
func (l *Latency) Quantile(source string, q float64) (time.Duration, bool) {
	i := l.index(source)
	if i < 0 {
		return 0, false
	}
	s := &l.src[i]
	var buf [latencySamples]time.Duration
	s.mu.Lock()
	n := s.n
	copy(buf[:], s.samples[:n])
	s.mu.Unlock()
	if n < minQuantileSamples {
		return 0, false
	}
	xs := buf[:n]
	slices.Sort(xs)
	k := int(math.Ceil(q*float64(n))) - 1
	return xs[min(max(k, 0), n-1)], true
}

func (l *Latency) begin(i int) { l.src[i].inflight.Add(1) }
func (l *Latency) end(i int)   { l.src[i].inflight.Add(-1) }

// load is what the latency balance compares: the decayed cost times the
// attempts in flight plus one.
func (l *Latency) load(i int, now time.Time) float64 {
	s := &l.src[i]
	inflight := float64(s.inflight.Load())
	s.mu.Lock()
	cost, measured := s.decayed(now, l.tau), s.measured
	s.mu.Unlock()
	if !measured && inflight > 0 {
		cost = float64(unmeasuredBusyCost)
	}
	return cost * (inflight + 1)
}

// LatencyStats is one source's latency as this process sees it.
type LatencyStats struct {
	// Source names the source.
	Source string
	// EWMA is the peak-EWMA of its time to first chunk (or answer), decayed
	// to now; 0 before the first observation.
	EWMA time.Duration
	// InFlight is its attempts running in this process.
	InFlight int64
	// Observed counts the observations recorded since the start.
	Observed uint64
	// P50 and P90 are the quantiles of its recent samples; 0 while there
	// are fewer than 20.
	P50, P90 time.Duration
}

// Stats returns every source's latency, in the order admission tries them
// (priority tiers ascending, configuration order within a tier).
func (l *Latency) Stats() []LatencyStats {
	now := l.clock.Now()
	out := make([]LatencyStats, len(l.names))
	for i, name := range l.names {
		s := &l.src[i]
		s.mu.Lock()
		ewma, total := s.decayed(now, l.tau), s.total
		s.mu.Unlock()
		p50, _ := l.Quantile(name, 0.5)
		p90, _ := l.Quantile(name, 0.9)
		out[i] = LatencyStats{
			Source: name, EWMA: time.Duration(ewma), InFlight: s.inflight.Load(),
			Observed: total, P50: p50, P90: p90,
		}
	}
	return out
}

// InFlight returns the attempts running on source in this process.
func (l *Latency) InFlight(source string) int64 {
	if i := l.index(source); i >= 0 {
		return l.src[i].inflight.Load()
	}
	return 0
}
