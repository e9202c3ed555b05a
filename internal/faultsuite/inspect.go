package faultsuite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Leases are the leases alive in Redis for one source after a run: quota
// in-flight slots and breaker probe leases. Both must be 0 once every call
// has returned, unless a reply was lost (LostReplies) while the lease was
// being taken: such a lease lives until it expires.
type Leases struct {
	// Scope and Source name the source whose keys were read.
	Scope, Source string
	// InFlight is the number of quota in-flight slots still held.
	InFlight int64
	// Probes is the number of breaker probe leases still held.
	Probes int64
	// InFlightLife and ProbeLife are how long the longest-lived lease of
	// each kind has left (0 for none).
	InFlightLife, ProbeLife time.Duration
}

// String prints the counts and the longest remaining lives, for a test's
// failure message.
func (l Leases) String() string {
	return fmt.Sprintf("%s/%s: in-flight %d (expiring within %v), probes %d (within %v)",
		l.Scope, l.Source, l.InFlight, l.InFlightLife.Round(time.Millisecond), l.Probes, l.ProbeLife.Round(time.Millisecond))
}

// Inspect reads the live leases of every source of sources (scope → source
// names) under prefix, from the keys of gate/redis (<prefix>:{<scope>:<source>}:inflight
// and :probes, sorted sets whose scores are expiries in µs of Redis time).
func Inspect(ctx context.Context, addr, prefix string, sources map[string][]string) ([]Leases, error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	return inspect(ctx, c, prefix, sources)
}

// InspectCluster is Inspect on the Redis Cluster of the seeds addrs: each
// source's keys are read on the master that serves their slot now.
func InspectCluster(ctx context.Context, addrs []string, prefix string, sources map[string][]string) ([]Leases, error) {
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: append([]string(nil), addrs...)})
	defer c.Close()
	return inspect(ctx, c, prefix, sources)
}

func inspect(ctx context.Context, c goredis.UniversalClient, prefix string, sources map[string][]string) ([]Leases, error) {
	now, err := c.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("faultsuite: redis TIME: %w", err)
	}
	alive := "(" + strconv.FormatInt(now.UnixMicro(), 10)
	var out []Leases
	for _, scope := range []string{ScopeChat, ScopeEmbed, ScopeTool} {
		for _, src := range sources[scope] {
			base := prefix + ":{" + strings.ToLower(scope) + ":" + src + "}:"
			l := Leases{Scope: scope, Source: src}
			if l.InFlight, l.InFlightLife, err = live(ctx, c, base+"inflight", alive, now); err != nil {
				return nil, err
			}
			if l.Probes, l.ProbeLife, err = live(ctx, c, base+"probes", alive, now); err != nil {
				return nil, err
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// live counts the unexpired members of a lease set and the life left to the
// longest-lived one.
func live(ctx context.Context, c goredis.UniversalClient, key, alive string, now time.Time) (int64, time.Duration, error) {
	n, err := c.ZCount(ctx, key, alive, "+inf").Result()
	if err != nil || n == 0 {
		return n, 0, wrapRead(key, err)
	}
	last, err := c.ZRangeWithScores(ctx, key, -1, -1).Result()
	if err != nil || len(last) == 0 {
		return n, 0, wrapRead(key, err)
	}
	return n, time.UnixMicro(int64(last[0].Score)).Sub(now), nil
}

func wrapRead(key string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("faultsuite: read %s: %w", key, err)
}

// SourcesOf lists the sources of the worker scopes in env.
func SourcesOf(env map[string]string) map[string][]string {
	out := map[string][]string{}
	for _, scope := range []string{ScopeChat, ScopeEmbed, ScopeTool} {
		if v := env[scope+"__SOURCES"]; v != "" {
			out[scope] = strings.Split(v, ",")
		}
	}
	return out
}
