package config

import (
	"slices"
	"time"

	"github.com/pgw-go/pgw/gate"
)

// Backend names where gate state lives.
type Backend string

// The backends of PGW_BREAKER_BACKEND and PGW_QUOTA_BACKEND.
const (
	// BackendMemory keeps state in this process (the default).
	BackendMemory Backend = "memory"
	// BackendRedis shares state between processes through Redis.
	BackendRedis Backend = "redis"
	// BackendNoop always allows; legal for the breaker only.
	BackendNoop Backend = "noop"
)

// Mode is what a scope does when nothing may run now: wait for a source to
// become runnable, or fail at once.
type Mode string

// The values of {SCOPE}__QUOTA_FULL and {SCOPE}__CIRCUIT_OPEN.
const (
	// ModeWait waits, within the scope's stall window.
	ModeWait Mode = "wait"
	// ModeFailFast returns an error at once.
	ModeFailFast Mode = "fail_fast"
)

// RedisDown is what the Redis gates do while Redis is unreachable.
type RedisDown string

// The values of PGW_REDIS_DOWN.
const (
	// RedisFailOpen serves from a local memory gate, logs once per outage,
	// and returns to Redis when it is back (the default).
	RedisFailOpen RedisDown = "fail_open"
	// RedisFailClosed returns an error saying Redis is down.
	RedisFailClosed RedisDown = "fail_closed"
)

// Defaults of the configuration keys that are not gate.Policy defaults.
const (
	DefaultBreakerBackend = BackendMemory
	DefaultRedisURL       = "redis://127.0.0.1:6379/0"
	DefaultRedisPrefix    = "pgw"
	DefaultRedisDown      = RedisFailOpen
	// DefaultRedisProbeInterval is how often the gateway's prober asks
	// Redis while it answers (PGW_REDIS_PROBE_INTERVAL_S).
	DefaultRedisProbeInterval = 500 * time.Millisecond
	// DefaultRedisProbeTimeout bounds one probe (PGW_REDIS_PROBE_TIMEOUT_S)
	// when the interval is the default; a shorter interval shortens it to
	// half the interval.
	DefaultRedisProbeTimeout = 200 * time.Millisecond
	// DefaultRedisProbeBackoff is the longest pause between probes during
	// an outage (PGW_REDIS_PROBE_BACKOFF_S), or the interval when that is
	// longer.
	DefaultRedisProbeBackoff = 2 * time.Second
	// DefaultRedisHeartbeatTTL is how long a process counts as alive in
	// Redis after its last probe (PGW_REDIS_HEARTBEAT_TTL_S), or six
	// intervals when that is longer.
	DefaultRedisHeartbeatTTL = 3 * time.Second
	// DefaultScopes is the default of PGW_SCOPES.
	DefaultScopes = "CHAT,EMBEDDING,OCR"
	// DefaultQuotaFull and DefaultCircuitOpen: a full quota refills by
	// itself within its minute, so calls wait for it by default; waiting on
	// open breakers would turn everyone's fast failure into a long hang, so
	// it is opt-in (a single-source scope should set
	// {SCOPE}__CIRCUIT_OPEN=wait).
	DefaultQuotaFull   = ModeWait
	DefaultCircuitOpen = ModeFailFast
	// DefaultAttemptsPerSource times the number of sources is the default
	// {SCOPE}__MAX_ATTEMPTS.
	DefaultAttemptsPerSource = 3
	DefaultStallWindow       = 300 * time.Second
	DefaultPollInterval      = 50 * time.Millisecond
	DefaultSourceTimeout     = 60 * time.Second
	DefaultWeight            = 1
)

// Settings is the whole configuration of a gateway. Build it with FromEnv,
// FromLookup or FromMap, or in code; a zero field means its default (see
// WithDefaults), so only what differs needs setting. Validate reports every
// invalid field at once.
type Settings struct {
	// BreakerBackend is memory (default), redis or noop.
	BreakerBackend Backend
	// QuotaBackend is memory or redis; empty means the breaker's backend,
	// with noop turned into memory.
	QuotaBackend Backend
	// Redis configures the Redis client used by the redis backends.
	Redis RedisSettings
	// Scopes are the active scopes, in the order of PGW_SCOPES.
	Scopes []ScopeSettings
}

// RedisSettings configures the Redis client.
type RedisSettings struct {
	// URL is a go-redis URL (redis://, rediss:// or unix://). It is a Secret
	// because it may carry a password. Empty means DefaultRedisURL. With
	// ClusterAddrs set it still supplies credentials and options.
	URL Secret
	// ClusterAddrs, when set, selects Redis Cluster with these seed
	// addresses (host:port).
	ClusterAddrs []string
	// Prefix starts every key (default "pgw"). It may not contain braces:
	// keys carry a {scope:source} hash tag.
	Prefix string
	// Down is fail_open (default) or fail_closed.
	Down RedisDown
	// ProbeInterval is how often the gateway's one prober runs a short
	// script on Redis while it answers; two failed probes in a row start
	// an outage, so a silent Redis is seen within about two intervals
	// (default DefaultRedisProbeInterval).
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe; at most half ProbeInterval, so that a
	// failed probe and its confirmation fit in one interval (default
	// DefaultRedisProbeTimeout, or half the interval when that is less).
	ProbeTimeout time.Duration
	// ProbeBackoff is the longest pause between probes during an outage:
	// the pause doubles from the interval up to it; at least ProbeInterval
	// (default max(DefaultRedisProbeBackoff, ProbeInterval)).
	ProbeBackoff time.Duration
	// HeartbeatTTL is how long a process counts as alive in Redis after its
	// last probe; fail_open divides each limit by the processes alive. More
	// than ProbeInterval (default max(DefaultRedisHeartbeatTTL, 6 ×
	// ProbeInterval), at most 10000000 s).
	HeartbeatTTL time.Duration
}

// Scope returns the active scope called name, and whether it exists.
func (s *Settings) Scope(name string) (ScopeSettings, bool) {
	for _, sc := range s.Scopes {
		if sc.Name == name {
			return sc, true
		}
	}
	return ScopeSettings{}, false
}

// WithDefaults returns a deep copy of s with every zero field replaced by its
// default, down to each scope and source. It does not validate.
func (s Settings) WithDefaults() Settings {
	if s.BreakerBackend == "" {
		s.BreakerBackend = DefaultBreakerBackend
	}
	if s.QuotaBackend == "" {
		s.QuotaBackend = BackendMemory
		if s.BreakerBackend == BackendRedis {
			s.QuotaBackend = BackendRedis
		}
	}
	if !s.Redis.URL.IsSet() {
		s.Redis.URL = NewSecret(DefaultRedisURL)
	}
	s.Redis.ClusterAddrs = slices.Clone(s.Redis.ClusterAddrs)
	if s.Redis.Prefix == "" {
		s.Redis.Prefix = DefaultRedisPrefix
	}
	if s.Redis.Down == "" {
		s.Redis.Down = DefaultRedisDown
	}
	s.Redis = s.Redis.withProbeDefaults()
	s.Scopes = slices.Clone(s.Scopes)
	for i := range s.Scopes {
		s.Scopes[i] = s.Scopes[i].WithDefaults()
	}
	return s
}

// defaultPolicy is gate's defaults, so that this package and the gates agree.
var defaultPolicy = gate.Policy{}.WithDefaults()

// withProbeDefaults fills the prober's zero fields. The defaults follow the
// interval, so that setting the interval alone, to any value its key
// accepts, gives a prober that can start: a timeout of at most half of it,
// a backoff and a heartbeat that outlast it — each within the range of
// seconds keys, [0.001, 10000000].
func (r RedisSettings) withProbeDefaults() RedisSettings {
	if r.ProbeInterval == 0 {
		r.ProbeInterval = DefaultRedisProbeInterval
	}
	if r.ProbeTimeout == 0 {
		r.ProbeTimeout = max(minDuration, min(DefaultRedisProbeTimeout, r.ProbeInterval/2))
	}
	if r.ProbeBackoff == 0 {
		r.ProbeBackoff = max(DefaultRedisProbeBackoff, r.ProbeInterval)
	}
	if r.HeartbeatTTL == 0 {
		r.HeartbeatTTL = min(maxDuration, max(DefaultRedisHeartbeatTTL, 6*r.ProbeInterval))
	}
	return r
}
