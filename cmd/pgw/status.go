package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// row is one line of pgw status.
type row struct {
	ref                               sourceRef
	state, forced, retryIn, cooldown  string
	fails, probes, inFlight, rpm, tpm string
	// advReq, advTok and advReset are what the upstream last advertised
	// (remaining/limit of its request and token windows, time to the
	// reset), shared by the fleet: "-" when nothing.
	advReq, advTok, advReset string
}

// status prints every scope and source.
func (st *store) status(ctx context.Context, w io.Writer) error {
	refs, err := st.scan(ctx)
	if err != nil {
		return err
	}
	if len(refs) == 0 {
		fmt.Fprintf(w, "no pgw state under prefix %q\n", st.prefix)
		return nil
	}
	now, err := st.serverMicros(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tSOURCE\tSTATE\tFORCED\tRETRY_IN\tCOOLDOWN\tFAILS\tPROBES\tIN_FLIGHT\tRPM_USED\tTPM_USED\tADV_REQUESTS\tADV_TOKENS\tADV_RESET")
	for _, ref := range sortedRefs(refs) {
		r, err := st.row(ctx, ref, refs[ref], now)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ref.Scope, r.ref.Source,
			r.state, r.forced, r.retryIn, r.cooldown, r.fails, r.probes, r.inFlight, r.rpm, r.tpm,
			r.advReq, r.advTok, r.advReset)
	}
	return tw.Flush()
}

// row reads one source: its breaker record through the gate's Snapshot, its
// probe leases and quota buckets directly.
func (st *store) row(ctx context.Context, ref sourceRef, f *found, now int64) (row, error) {
	b, err := st.breaker(ref.Scope)
	if err != nil {
		return row{}, err
	}
	snap, err := b.Snapshot(ctx, ref.Source)
	if err != nil {
		return row{}, err
	}
	p := b.Policy()
	r := row{ref: ref, state: snap.State.String(), forced: "-", retryIn: "-", cooldown: dur(snap.Cooldown),
		fails: "-", probes: "-", inFlight: "-", rpm: "-", tpm: "-", advReq: "-", advTok: "-", advReset: "-"}
	switch {
	case snap.Forced != gate.ForceNone:
		r.forced = snap.Forced.String()
		if snap.Forced == gate.ForceOpen {
			r.retryIn = "until reset"
		}
	case snap.State == gate.Open && snap.RetryAfter > 0:
		r.retryIn = dur(snap.RetryAfter)
	case snap.State == gate.Open:
		r.retryIn = "now" // cooldown over: the next call gets the probe
	}
	if snap.State == gate.Closed {
		r.fails = strconv.Itoa(snap.ConsecutiveFailures)
		if p.Window > 0 {
			r.fails += fmt.Sprintf(" (window %d/%d)", snap.WindowFailures, snap.WindowCalls)
		}
	}
	if snap.State == gate.HalfOpen {
		r.probes = fmt.Sprintf("%d/%d", snap.ProbesInFlight, p.HalfOpenProbes)
		if left, err := st.leaseLeft(ctx, b.Keys(ref.Source)[1], now); err != nil {
			return row{}, err
		} else if left > 0 {
			r.probes += " lease " + dur(left)
		}
	}
	if err := st.advertised(ctx, &r); err != nil {
		return row{}, err
	}
	limits, known := st.limits(ref.Scope, ref.Source)
	if f.quota || (known && !limits.Unlimited()) {
		if err := st.quota(ctx, &r, limits, now); err != nil {
			return row{}, err
		}
	}
	return r, nil
}

// leaseLeft is how long the longest-lived probe lease has left.
func (st *store) leaseLeft(ctx context.Context, key string, now int64) (time.Duration, error) {
	zs, err := st.c.ZRangeWithScores(ctx, key, -1, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("reading probe leases: %w", err)
	}
	if len(zs) == 0 || int64(zs[0].Score) <= now {
		return 0, nil
	}
	return time.Duration(int64(zs[0].Score)-now) * time.Microsecond, nil
}

// quota fills the in-flight and rate columns from the source's quota keys
// (lua/quota_common.lua): live in-flight leases, and each bucket's level
// drained to now when the limit is known — the requests or tokens counted in
// the rolling minute — or, when it is not, the level at its last write, an
// upper bound ("≤").
func (st *store) quota(ctx context.Context, r *row, l gate.Limits, now int64) error {
	keys := st.quotaKeys(r.ref.Scope, r.ref.Source)
	pipe := st.c.Pipeline()
	buckets := pipe.HMGet(ctx, keys[0], "rl", "rs", "ru", "tl", "ts", "tu")
	inflight := pipe.ZCount(ctx, keys[1], "("+strconv.FormatInt(now, 10), "+inf")
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("reading quota of %s/%s: %w", r.ref.Scope, r.ref.Source, err)
	}
	n := inflight.Val()
	r.inFlight = strconv.FormatInt(n, 10)
	if l.MaxInFlight > 0 {
		r.inFlight += "/" + strconv.Itoa(l.MaxInFlight)
	}
	v := buckets.Val()
	r.rpm = used(v[0], v[1], v[2], l.RPM, now)
	r.tpm = used(v[3], v[4], v[5], l.TPM, now)
	return nil
}

// used renders one bucket: level (scaled units) at stamp (µs), unit.
func used(levelV, stampV, unitV any, limit int, now int64) string {
	level, okL := parseInt(levelV)
	stamp, _ := parseInt(stampV)
	unit, okU := parseInt(unitV)
	if !okL || !okU || unit <= 0 {
		if limit > 0 {
			return "0/" + strconv.Itoa(limit)
		}
		return "-"
	}
	if limit <= 0 {
		return "≤" + strconv.FormatInt(ceilDiv(level, unit), 10)
	}
	rate := gate.NewRate(limit)
	if unit != rate.Unit && level > 0 { // the limit changed: same share, new units
		level = ceilDiv(level*rate.Unit, unit)
	}
	// A bucket holds at most two minutes' worth (its allowance plus a debt),
	// so after two minutes it is empty; this also keeps the product small.
	switch elapsed := now - stamp; {
	case elapsed >= 2*60_000_000:
		level = 0
	case elapsed > 0:
		level = max(level-elapsed*rate.Drain, 0)
	}
	return strconv.FormatInt(ceilDiv(level, rate.Unit), 10) + "/" + strconv.Itoa(limit)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// advertised fills the ADV_ columns from the source's advertised budget.
func (st *store) advertised(ctx context.Context, r *row) error {
	b, err := redis.NewBudget(st.c, r.ref.Scope, redis.WithPrefix(st.prefix))
	if err != nil {
		return err
	}
	a, ok, err := b.Read(ctx, r.ref.Source)
	if err != nil {
		return fmt.Errorf("reading the advertised budget of %s/%s: %w", r.ref.Scope, r.ref.Source, err)
	}
	if !ok {
		return nil
	}
	r.advReq, r.advTok = advWindow(a.Requests), advWindow(a.Tokens)
	var reset time.Duration
	for _, w := range []gate.AdvertisedWindow{a.Requests, a.Tokens} {
		if w.Known() && w.Reset > reset {
			reset = w.Reset
		}
	}
	if reset > 0 {
		r.advReset = dur(reset)
	}
	return nil
}

// advWindow renders remaining/limit; "?" for an unknown half.
func advWindow(w gate.AdvertisedWindow) string {
	if !w.Known() && w.Limit < 0 {
		return "-"
	}
	part := func(n int64) string {
		if n < 0 {
			return "?"
		}
		return strconv.FormatInt(n, 10)
	}
	return part(w.Remaining) + "/" + part(w.Limit)
}
