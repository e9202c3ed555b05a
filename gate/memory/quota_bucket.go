package memory

import "github.com/pgw-go/pgw/gate"

// rateBucket is one rolling per-minute limit in the exact integer form of
// gate.Rate: level scaled units were in the bucket at the instant stamp (µs),
// and it drains Drain units per µs. An admission that costs c units fits when
// level + c ≤ Capacity. gate/redis/lua/quota_*.lua do the same arithmetic;
// docs/QUOTA.md explains why the waits it computes are exact.
type rateBucket struct {
	gate.Rate
	level int64
	stamp int64
	empty int64 // µs after which even a full, overdrawn bucket (2 × Capacity) is empty
}

func newRateBucket(perMinute int) rateBucket {
	r := gate.NewRate(perMinute)
	b := rateBucket{Rate: r}
	if r.Drain > 0 {
		b.empty = (2*r.Capacity + r.Drain - 1) / r.Drain
	}
	return b
}

// drain brings the bucket to the instant now. A clock that steps back does not
// refill anything: the later stamp is kept.
func (b *rateBucket) drain(now int64) {
	if now <= b.stamp {
		return
	}
	elapsed := now - b.stamp
	b.stamp = now
	if elapsed >= b.empty { // also keeps elapsed·Drain from overflowing
		b.level = 0
		return
	}
	b.level = max(b.level-elapsed*b.Drain, 0)
}

// wait returns 0 when cost fits now, else the whole µs until it does: the
// smallest w with level − w·Drain + cost ≤ Capacity. At w the request fits,
// at w−1 it does not, which is what makes RetryAfter exact.
func (b *rateBucket) wait(cost int64) int64 {
	need := b.level + cost - b.Capacity
	if need <= 0 {
		return 0
	}
	return (need + b.Drain - 1) / b.Drain
}

// clampDelta turns a token correction into scaled units, bounded to two
// minutes' allowance either way so that the product cannot overflow; the
// level is capped at 2 × Capacity anyway (a debt beyond one extra minute is
// forgiven).
func (b *rateBucket) clampDelta(tokens int64, perMinute int) int64 {
	lim := 2 * int64(perMinute)
	return min(max(tokens, -lim), lim) * b.Unit
}
