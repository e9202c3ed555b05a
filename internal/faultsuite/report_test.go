package faultsuite

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

func at(worker int, source string, from, to int64) Interval {
	return Interval{Worker: worker, Scope: "CHAT", Source: source, Start: from * int64(time.Millisecond), End: to * int64(time.Millisecond)}
}

func TestProbeOverlapsFindsTwoProbesOfOneSourceAtOnce(t *testing.T) {
	tests := []struct {
		name    string
		probes  []Interval
		excused []Interval
		shared  bool
		want    int
	}{
		{"serial probes", []Interval{at(0, "a", 0, 10), at(1, "a", 10, 20), at(0, "a", 30, 40)}, nil, true, 0},
		{"two workers at once", []Interval{at(0, "a", 0, 10), at(1, "a", 5, 20)}, nil, true, 1},
		{"a long probe under several short ones", []Interval{at(0, "a", 0, 100), at(1, "a", 10, 20), at(1, "a", 30, 40),
			at(1, "a", 50, 60), at(1, "a", 70, 80), at(1, "a", 90, 95)}, nil, true, 5},
		{"different sources", []Interval{at(0, "a", 0, 10), at(1, "b", 5, 20)}, nil, true, 0},
		{"excused by an outage", []Interval{at(0, "a", 0, 10), at(1, "a", 5, 20)}, []Interval{at(0, "", 8, 9)}, true, 0},
		{"per process breakers", []Interval{at(0, "a", 0, 10), at(1, "a", 5, 20)}, nil, false, 0},
		{"per process breakers, one process twice", []Interval{at(0, "a", 0, 10), at(0, "a", 5, 20)}, nil, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Len(t, ProbeOverlaps(tt.probes, tt.excused, tt.shared), tt.want)
		})
	}
}

func TestHistogramQuantilesWithinTwoPercent(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Add(time.Duration(i) * time.Microsecond)
	}
	assert.InEpsilon(t, 500*time.Microsecond, h.Quantile(0.5), 0.02)
	assert.InEpsilon(t, 990*time.Microsecond, h.Quantile(0.99), 0.02)
	assert.Equal(t, time.Millisecond, h.Max())

	var m Histogram
	m.Merge(h)
	m.Merge(Histogram{})
	assert.Equal(t, h.Quantile(0.5), m.Quantile(0.5))
	assert.Zero(t, Histogram{}.Quantile(0.5))
}

func TestLostHookSortsGateScriptsByKeys(t *testing.T) {
	policy := make([]any, policyArgs)
	evalsha := func(keys []string, args ...any) []any {
		out := []any{"evalsha", "sha", len(keys)}
		for _, k := range keys {
			out = append(out, k)
		}
		return append(out, args...)
	}
	var h lostHook
	h.count(evalsha([]string{"p:{chat:a}:quota", "p:{chat:a}:inflight"}, make([]any, 10)...), true)
	h.count(evalsha([]string{"p:{chat:a}:inflight"}, "id"), true)
	h.count(evalsha([]string{"p:{chat:a}:cb", "p:{chat:a}:probes"}, policy...), true)
	h.count(evalsha([]string{"p:{chat:a}:cb", "p:{chat:a}:probes"}, append(policy, 1, 2, 3, 4)...), true)
	h.count(evalsha([]string{"p:{chat:a}:quota"}, 1, 2, 3, 4), true)
	h.count([]any{"ping"}, true)
	assert.Equal(t, LostReplies{Acquire: 1, Release: 1, TryEnter: 1, Record: 1, Other: 2}, h.counts())

	// The combined scripts: an admission may hold both leases, a
	// conclusion may have freed neither.
	all := []string{"p:{chat:a}:cb", "p:{chat:a}:probes", "p:{chat:a}:quota", "p:{chat:a}:inflight"}
	var c lostHook
	c.count(evalsha(all, make([]any, admitArgs)...), true)
	c.count(evalsha(all, make([]any, concludeArgs)...), true)
	c.count(evalsha(append(all, "p:{chat:a}:advertised"), make([]any, admitArgs)...), true) // with the budget's take
	assert.Equal(t, LostReplies{Acquire: 2, Release: 1, TryEnter: 2, Record: 1}, c.counts())

	// A command that never left counts only when it would have given a
	// lease back: the lease it would have freed stays.
	var u lostHook
	u.count(evalsha([]string{"p:{chat:a}:quota", "p:{chat:a}:inflight"}, make([]any, 10)...), false)
	u.count(evalsha([]string{"p:{chat:a}:cb", "p:{chat:a}:probes"}, policy...), false)
	u.count(evalsha(all, make([]any, admitArgs)...), false)
	u.count([]any{"ping"}, false)
	u.count(evalsha([]string{"p:{chat:a}:inflight"}, "id"), false)
	u.count(evalsha([]string{"p:{chat:a}:cb", "p:{chat:a}:probes"}, append(policy, 1, 2, 3, 4)...), false)
	u.count(evalsha(all, make([]any, concludeArgs)...), false)
	assert.Equal(t, LostReplies{Release: 2, Record: 2}, u.counts())
}

func TestNeverSentIsADialOrPoolFailure(t *testing.T) {
	assert.True(t, neverSent(&net.OpError{Op: "dial", Err: errors.New("refused")}))
	assert.True(t, neverSent(goredis.ErrPoolTimeout))
	assert.True(t, neverSent(goredis.ErrClosed))
	assert.False(t, neverSent(nil))
	assert.False(t, neverSent(goredis.Nil))
	assert.False(t, neverSent(&net.OpError{Op: "read", Err: errors.New("reset")}), "a read error may hide a script that ran")
	assert.False(t, neverSent(context.DeadlineExceeded))
}
