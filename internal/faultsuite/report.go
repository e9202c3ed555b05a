package faultsuite

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what one worker measured, or (Merge) what a fleet did.
type Report struct {
	// Workers is the number of workers merged into the report.
	Workers int `json:"workers"`
	// Calls is the number of calls made; Results counts them by result,
	// Ops by "op/result".
	Calls   int64            `json:"calls"`
	Results map[string]int64 `json:"results"`
	Ops     map[string]int64 `json:"ops"`
	// Phases splits Calls, Results and Overhead by the phase the parent had
	// announced (Fleet.Phase) when each call returned; "" before the first.
	Phases map[string]*Phase `json:"phases"`
	// Overhead holds, for calls that succeeded in one attempt (chat, embed,
	// tool), the call's time minus the time spent in its transport: the
	// cost of governing it (admission, gate round trips, bookkeeping).
	Overhead Histogram `json:"overhead"`
	// MaxStall is the longest time a call spent outside its attempts among
	// the calls held to the bound (MaxStallCall describes it); Late of them
	// went past Spec.Window, within Spec.Bound. Excused calls went past
	// Spec.Window while their scope kept delivering; MaxStallExcused is the
	// longest of them.
	MaxStall        time.Duration `json:"max_stall"`
	MaxStallCall    string        `json:"max_stall_call"`
	Late            int64         `json:"late"`
	MaxStallExcused time.Duration `json:"max_stall_excused"`
	Excused         int64         `json:"excused"`
	// Cancelled counts calls whose ctx was cancelled before they returned;
	// MaxCancelLatency is the longest time one took to return after that.
	Cancelled        int64         `json:"cancelled"`
	MaxCancelLatency time.Duration `json:"max_cancel_latency"`
	// MaxPause is the longest span in which a worker process ran none of
	// its goroutines on time (its machine busy with others); the time a
	// cancelled call took to return counts against Spec.CancelBound
	// without the pauses in it.
	MaxPause time.Duration `json:"max_pause"`
	// Close is how long the gateway's Close took (the longest of the
	// merged workers').
	Close time.Duration `json:"close"`
	// Violations counts broken invariants; Examples holds the first few.
	Violations int64    `json:"violations"`
	Examples   []string `json:"examples"`
	// Probes are the probe attempts (HalfOpen leases) the worker ran.
	Probes []Interval `json:"probes"`
	// Outages are the Redis outages the worker's fail_open gates went
	// through (from their log lines).
	Outages []Interval `json:"outages"`
	// Lost counts gate round trips whose reply was lost (own Redis client
	// only): the script may or may not have run.
	Lost LostReplies `json:"lost"`
	// WriterFailed and WriterDropped count the outcomes the gateway's
	// outcome writer failed to write (a gate's error, its write timeout)
	// or never tried (its queue full, Close's deadline): each leaves its
	// leases to expire.
	WriterFailed  int64 `json:"writer_failed"`
	WriterDropped int64 `json:"writer_dropped"`
	// Warnings counts the gateway's Warn log lines by message.
	Warnings map[string]int64 `json:"warnings"`
	// Goroutines is the number of goroutines of pgw, go-redis and
	// net/http's pool alive after Close; Stacks shows them.
	Goroutines int    `json:"goroutines"`
	Stacks     string `json:"stacks,omitempty"`
}

// Phase is what the calls of one phase did.
type Phase struct {
	// Calls, Results and Overhead are Report's, for the calls of this
	// phase only.
	Calls    int64            `json:"calls"`
	Results  map[string]int64 `json:"results"`
	Overhead Histogram        `json:"overhead"`
}

// Interval is a span of wall-clock time on one source ("" for a whole
// process).
type Interval struct {
	// Worker is the number of the worker process that saw the span.
	Worker int `json:"worker"`
	// Scope is the scope of a probe's span; for a gate outage, the kind of
	// gate that was unreachable ("breaker" or "quota").
	Scope string `json:"scope,omitempty"`
	// Source is the source of a probe's span; empty for an outage.
	Source string `json:"source,omitempty"`
	Start  int64  `json:"start"` // unix ns
	End    int64  `json:"end"`   // unix ns
}

// LostReplies counts gate scripts sent to Redis whose reply never came back
// (connection killed, read timeout), by kind. Such a script may or may not
// have run, so each may leave one lease behind until it expires.
type LostReplies struct {
	// Acquire: a quota Acquire that may have taken an in-flight lease.
	Acquire int64 `json:"acquire"`
	// Release: a quota Release that may not have freed one.
	Release int64 `json:"release"`
	// TryEnter: a breaker TryEnter that may have granted a probe lease.
	TryEnter int64 `json:"try_enter"`
	// Record: a breaker Record that may not have freed one.
	Record int64 `json:"record"`
	// Other: Settle, Snapshot, RetryAfter.
	Other int64 `json:"other"`
}

// InFlight is how many in-flight leases the lost replies may have left.
func (l LostReplies) InFlight() int64 { return l.Acquire + l.Release }

// Probes is how many probe leases the lost replies may have left.
func (l LostReplies) Probes() int64 { return l.TryEnter + l.Record }

// violation counts a broken invariant and keeps the first examples.
func (r *Report) violation(format string, args ...any) {
	r.Violations++
	if len(r.Examples) < 10 {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// Merge sums reports of several workers.
func Merge(rs []Report) Report {
	m := Report{Results: map[string]int64{}, Ops: map[string]int64{}, Phases: map[string]*Phase{},
		Warnings: map[string]int64{}}
	for _, r := range rs {
		m.Workers += max(r.Workers, 1)
		m.Calls += r.Calls
		addCounts(m.Results, r.Results)
		addCounts(m.Ops, r.Ops)
		for name, p := range r.Phases {
			mp := m.Phases[name]
			if mp == nil {
				mp = &Phase{Results: map[string]int64{}}
				m.Phases[name] = mp
			}
			mp.Calls += p.Calls
			addCounts(mp.Results, p.Results)
			mp.Overhead.Merge(p.Overhead)
		}
		m.Overhead.Merge(r.Overhead)
		if r.MaxStall > m.MaxStall {
			m.MaxStall, m.MaxStallCall = r.MaxStall, r.MaxStallCall
		}
		m.Late += r.Late
		m.MaxStallExcused = max(m.MaxStallExcused, r.MaxStallExcused)
		m.Excused += r.Excused
		m.Cancelled += r.Cancelled
		m.MaxCancelLatency = max(m.MaxCancelLatency, r.MaxCancelLatency)
		m.MaxPause = max(m.MaxPause, r.MaxPause)
		m.Close = max(m.Close, r.Close)
		m.Violations += r.Violations
		m.Examples = append(m.Examples, r.Examples...)
		m.Probes = append(m.Probes, r.Probes...)
		m.Outages = append(m.Outages, r.Outages...)
		m.Lost.Acquire += r.Lost.Acquire
		m.Lost.Release += r.Lost.Release
		m.Lost.TryEnter += r.Lost.TryEnter
		m.Lost.Record += r.Lost.Record
		m.Lost.Other += r.Lost.Other
		m.WriterFailed += r.WriterFailed
		m.WriterDropped += r.WriterDropped
		addCounts(m.Warnings, r.Warnings)
		m.Goroutines += r.Goroutines
		m.Stacks += r.Stacks
	}
	return m
}

func addCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

// ProbeOverlaps returns every pair of probe attempts on one source that ran
// at the same time, although a source has one probe lease at a time
// (HalfOpenProbes 1), leaving out pairs that touch an excused window (a
// Redis outage, during which each process's local fallback grants its own
// leases; a Redis restart, which forgets the leases). With shared false (the
// memory backend: one breaker per process) only probes of the same worker
// are compared.
func ProbeOverlaps(probes []Interval, excused []Interval, shared bool) []string {
	by := map[string][]Interval{}
	for _, p := range probes {
		k := p.Scope + "/" + p.Source
		if !shared {
			k = fmt.Sprintf("worker %d: %s", p.Worker, k)
		}
		by[k] = append(by[k], p)
	}
	touches := func(p Interval) bool {
		for _, w := range excused {
			if p.Start <= w.End && w.Start <= p.End {
				return true
			}
		}
		return false
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		ps := by[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].Start < ps[j].Start })
		// Sweep in start order, comparing each probe with the earlier one
		// that reaches furthest.
		var reach *Interval
		for i := range ps {
			b := &ps[i]
			if touches(*b) {
				continue
			}
			if reach != nil && b.Start < reach.End {
				out = append(out, fmt.Sprintf("%s: probe of worker %d [%s, %s] overlaps probe of worker %d [%s, %s]",
					k, reach.Worker, stamp(reach.Start), stamp(reach.End), b.Worker, stamp(b.Start), stamp(b.End)))
			}
			if reach == nil || b.End > reach.End {
				reach = b
			}
		}
	}
	return out
}

func stamp(ns int64) string { return time.Unix(0, ns).Format("15:04:05.000000") }

// Summary renders the report's figures as text lines.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "calls %d over %d workers\n", r.Calls, r.Workers)
	fmt.Fprintf(&b, "results: %s\n", formatCounts(r.Results))
	fmt.Fprintf(&b, "by operation: %s\n", formatCounts(r.Ops))
	if r.Overhead.N > 0 {
		fmt.Fprintf(&b, "overhead (call time minus transport time, %d one-attempt successes): p50 %v, p99 %v, max %v\n",
			r.Overhead.N, r.Overhead.Quantile(0.5), r.Overhead.Quantile(0.99), r.Overhead.Max())
	}
	fmt.Fprintf(&b, "max time outside attempts: %v (%s); %d calls past window+poll within the slack; %d past it excused by their scope's deliveries (max %v)\n",
		r.MaxStall.Round(time.Microsecond), r.MaxStallCall, r.Late, r.Excused, r.MaxStallExcused.Round(time.Microsecond))
	if r.Cancelled > 0 {
		fmt.Fprintf(&b, "cancelled calls %d, max return after cancel %v (longest process pause %v)\n",
			r.Cancelled, r.MaxCancelLatency.Round(time.Microsecond), r.MaxPause.Round(time.Microsecond))
	}
	fmt.Fprintf(&b, "probe attempts %d; redis outages seen %d; lost gate replies: acquire %d, release %d, try_enter %d, record %d, other %d\n",
		len(r.Probes), len(r.Outages), r.Lost.Acquire, r.Lost.Release, r.Lost.TryEnter, r.Lost.Record, r.Lost.Other)
	fmt.Fprintf(&b, "outcomes the writer failed to write %d, dropped %d\n", r.WriterFailed, r.WriterDropped)
	fmt.Fprintf(&b, "Close took %v; goroutines left after it: %d\n", r.Close.Round(time.Microsecond), r.Goroutines)
	if len(r.Warnings) > 0 {
		fmt.Fprintf(&b, "gateway warnings: %s\n", formatCounts(r.Warnings))
	}
	fmt.Fprintf(&b, "violations %d", r.Violations)
	for _, e := range r.Examples {
		fmt.Fprintf(&b, "\n  %s", e)
	}
	return b.String()
}

func formatCounts(m map[string]int64) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// Histogram counts durations in logarithmic buckets 2% wide, from 1 µs:
// quantiles are exact to 2%. The zero value is empty and ready.
type Histogram struct {
	// Buckets counts durations by bucket: bucket k holds those from
	// 1.02^k µs up to 1.02^(k+1) µs.
	Buckets map[int]int64 `json:"buckets"`
	// N is the number of durations counted.
	N int64 `json:"n"`
	// MaxNs is the longest duration counted, in nanoseconds.
	MaxNs int64 `json:"max_ns"`
}

const histogramBase = 1.02

// Add counts d.
func (h *Histogram) Add(d time.Duration) {
	if h.Buckets == nil {
		h.Buckets = map[int]int64{}
	}
	us := max(float64(d)/float64(time.Microsecond), 1)
	h.Buckets[int(math.Log(us)/math.Log(histogramBase))]++
	h.N++
	h.MaxNs = max(h.MaxNs, int64(d))
}

// Merge adds o's counts.
func (h *Histogram) Merge(o Histogram) {
	if o.N == 0 {
		return
	}
	if h.Buckets == nil {
		h.Buckets = map[int]int64{}
	}
	for k, v := range o.Buckets {
		h.Buckets[k] += v
	}
	h.N += o.N
	h.MaxNs = max(h.MaxNs, o.MaxNs)
}

// Quantile returns the upper edge of the bucket holding the q-quantile (0
// for an empty histogram).
func (h Histogram) Quantile(q float64) time.Duration {
	if h.N == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.N)))
	rank = min(max(rank, 1), h.N)
	var seen int64
	for _, k := range slices.Sorted(maps.Keys(h.Buckets)) {
		seen += h.Buckets[k]
		if seen >= rank {
			edge := time.Duration(math.Pow(histogramBase, float64(k+1)) * float64(time.Microsecond))
			return min(edge, time.Duration(h.MaxNs)).Round(time.Microsecond)
		}
	}
	return time.Duration(h.MaxNs)
}

// Max returns the largest duration counted.
func (h Histogram) Max() time.Duration { return time.Duration(h.MaxNs).Round(time.Microsecond) }
