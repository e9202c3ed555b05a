package pgw

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
)

// newRedisClient builds the client of PGW_REDIS_URL, or of
// PGW_REDIS_CLUSTER_ADDRS with the URL's credentials and options. Gate
// scripts are not idempotent and are never resent whatever the client's
// settings (gate/redis marks them so); other commands are not retried either
// (MaxRetries -1) unless the URL asks for retries, and each connection is
// dialled once (DialerRetries 1; the prober retries). The caller's
// deadline bounds each gate operation (ContextTimeoutEnabled): without it
// go-redis waits out its read timeout (5 s by default, read_timeout in the URL) whatever the ctx
// says, and a call with a 100 ms deadline on a stalled Redis returned after
// the whole stall (internal/faultsuite, TestCallerDeadlineBoundsGateOperationsOnASlowRedis).
func newRedisClient(rs config.RedisSettings) (goredis.UniversalClient, error) {
	o, err := goredis.ParseURL(rs.URL.Reveal())
	if err != nil {
		// Validated settings never get here; the go-redis error may quote
		// the URL, so it is not passed on.
		return nil, &ConfigError{Problems: []ConfigProblem{{Key: "PGW_REDIS_URL", Value: config.Redacted,
			Legal: "go-redis URL: redis://[[user]:password@]host[:port][/db][?options], rediss://… or unix:///path"}}}
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = -1
	}
	o.ContextTimeoutEnabled = true
	// One dial per connection attempt: go-redis's default is five, with
	// 100 ms between them, which a call that meets a Redis refusing
	// connections would sit through before fail_open serves it. The prober
	// decides outages and recovery at its own interval and backoff.
	o.DialerRetries = 1
	if len(rs.ClusterAddrs) == 0 {
		return goredis.NewClient(o), nil
	}
	uo := &goredis.UniversalOptions{
		Addrs:           slices.Clone(rs.ClusterAddrs), // go-redis appends the nodes it discovers to it
		IsClusterMode:   true,
		ClientName:      o.ClientName,
		Protocol:        o.Protocol,
		Username:        o.Username,
		Password:        o.Password,
		MaxRetries:      o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff,
		DialTimeout:     o.DialTimeout,
		DialerRetries:   o.DialerRetries,
		ReadTimeout:     o.ReadTimeout,
		WriteTimeout:    o.WriteTimeout,
		PoolFIFO:        o.PoolFIFO,
		PoolSize:        o.PoolSize,
		PoolTimeout:     o.PoolTimeout,
		MinIdleConns:    o.MinIdleConns,
		MaxIdleConns:    o.MaxIdleConns,
		MaxActiveConns:  o.MaxActiveConns,
		ConnMaxIdleTime: o.ConnMaxIdleTime,
		ConnMaxLifetime: o.ConnMaxLifetime,
		TLSConfig:       o.TLSConfig,
	}
	uo.ContextTimeoutEnabled = o.ContextTimeoutEnabled
	return goredis.NewUniversalClient(uo), nil
}

// scopeGates are the breaker and quota gates of one scope.
type scopeGates struct {
	breaker gate.ProviderGate
	quota   gate.QuotaGate // nil: no source of the scope is limited
	// advertising is the advertised budget of the scope's sources.
	advertising admission.Advertising
	// preloadBudget loads the budget script (nil without Redis).
	preloadBudget func(context.Context) error
	// preloadBreaker and preloadQuota load the Redis scripts (nil for the
	// other backends); the scripts are the same for every scope.
	preloadBreaker, preloadQuota func(context.Context) error
}

// buildGates builds sc's gates on the backends s names.
//
// With Redis, pr (the gateway's prober) decides outages for every failover
// gate: fail_open serves from local gates, with each limit shared among the
// processes alive in Redis; fail_closed fails at once.
func buildGates(s *config.Settings, sc config.ScopeSettings, rc goredis.UniversalClient, pr *redis.Prober, log *slog.Logger) (scopeGates, error) {
	var g scopeGates
	policy := sc.Policy()
	limits := make(map[string]gate.Limits, len(sc.Sources))
	for _, src := range sc.Sources {
		if l := src.EnforcedLimits(); !l.Unlimited() {
			limits[src.Name] = l
		}
	}
	var follow []redis.FailoverOption
	if pr != nil {
		follow = append(follow, redis.WithProber(pr))
	}
	if err := buildBudget(&g, s, sc, rc, log, follow...); err != nil {
		return g, err
	}
	local := func() (gate.ProviderGate, error) { return memory.NewBreaker(policy) }
	var down redis.Mode
	if s.BreakerBackend == config.BackendRedis || s.QuotaBackend == config.BackendRedis {
		var err error
		if down, err = redis.ParseMode(string(s.Redis.Down)); err != nil {
			return g, err
		}
	}

	switch s.BreakerBackend {
	case config.BackendNoop:
		g.breaker = gate.Noop{}
	case config.BackendRedis:
		rb, err := redis.NewBreaker(rc, sc.Name, policy, redis.WithPrefix(s.Redis.Prefix))
		if err != nil {
			return g, err
		}
		g.preloadBreaker = rb.Preload
		g.breaker = rb
		if down == redis.FailOpen {
			mb, err := local()
			if err != nil {
				return g, err
			}
			if g.breaker, err = redis.NewFailover(rb, mb, down, log, follow...); err != nil {
				return g, err
			}
		} else if pr != nil {
			if g.breaker, err = redis.NewFailover(rb, nil, down, log, follow...); err != nil {
				return g, err
			}
		}
	default:
		mb, err := local()
		if err != nil {
			return g, err
		}
		g.breaker = mb
	}

	if len(limits) == 0 {
		return g, nil
	}
	mq, err := memory.NewQuota(limits)
	if err != nil {
		return g, err
	}
	if s.QuotaBackend != config.BackendRedis {
		g.quota = mq
		return g, nil
	}
	rq, err := redis.NewQuota(rc, sc.Name, limits, redis.WithPrefix(s.Redis.Prefix), redis.WithLease(permitLease(sc)))
	if err != nil {
		return g, err
	}
	g.preloadQuota = rq.Preload
	g.quota = rq
	switch {
	case down == redis.FailOpen && pr != nil:
		fq, err := redis.NewFleetQuota(limits, pr)
		if err != nil {
			return g, err
		}
		if g.quota, err = redis.NewQuotaFailover(rq, fq, redis.FailOpen, log, follow...); err != nil {
			return g, err
		}
	case down == redis.FailOpen:
		if g.quota, err = redis.NewQuotaFailover(rq, mq, redis.FailOpen, log); err != nil {
			return g, err
		}
	case pr != nil:
		if g.quota, err = redis.NewQuotaFailover(rq, nil, redis.FailClosed, log, follow...); err != nil {
			return g, err
		}
	}
	return g, nil
}

// permitLease is how long a Redis in-flight slot outlives a permit nobody
// gave back: a crashed process, or a reply Redis lost — an Acquire that ran
// although its caller saw a timeout, a Release that never ran. A permit
// covers one attempt, which the source's timeout bounds (a chat stream
// included), so the lease is the probe lease's default for the scope's
// slowest source, max(2 × timeout, timeout + 5 s), rather than
// redis.DefaultLease, with which a 300 ms Redis stall would take slots away
// for 10 minutes (internal/faultsuite, TestSlowRedisAgainstTheOperationTimeout).
func permitLease(sc config.ScopeSettings) time.Duration {
	var slowest time.Duration
	for _, src := range sc.Sources {
		slowest = max(slowest, src.Timeout)
	}
	return gate.DefaultProbeTTL(0, slowest)
}

// newPacer is the chat scope's AIMD pacer over its sources.
func newPacer(sc config.ScopeSettings) (*admission.Pacer, error) {
	names := make([]string, len(sc.Sources))
	for i, src := range sc.Sources {
		names[i] = src.Name
	}
	p, err := admission.NewPacer(names, admission.PacerConfig{})
	if err != nil {
		return nil, fmt.Errorf("pgw: scope %q: %w", sc.Name, err)
	}
	return p, nil
}
