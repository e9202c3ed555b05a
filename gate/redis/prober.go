package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/internal/redisaddr"
)

// Defaults of a Prober.
const (
	// DefaultProbeInterval is how often a Prober asks Redis while it answers.
	DefaultProbeInterval = 500 * time.Millisecond
	// DefaultProbeTimeout bounds one probe: a Redis that does not answer
	// within it — refused, reset or silent — is down.
	DefaultProbeTimeout = 200 * time.Millisecond
	// DefaultProbeBackoff is the longest pause between probes during an
	// outage (the pause doubles from the interval up to it).
	DefaultProbeBackoff = 2 * time.Second
	// DefaultHeartbeatTTL is how long a process counts as alive in Redis
	// after its last heartbeat.
	DefaultHeartbeatTTL = 3 * time.Second
)

// ProberOption configures a Prober.
type ProberOption func(*proberConfig)

type proberConfig struct {
	interval, timeout, backoff, ttl time.Duration
	prefix                          string
	log                             *slog.Logger
	mode                            Mode
}

// WithProbeInterval sets how often the prober asks Redis while it answers
// (default DefaultProbeInterval). An outage is seen within one interval plus
// two probe timeouts (two failed probes in a row), at most two intervals.
func WithProbeInterval(d time.Duration) ProberOption {
	return func(c *proberConfig) { c.interval = d }
}

// WithProbeTimeout bounds one probe (default DefaultProbeTimeout); at most
// half the interval, so that two failed probes fit in one interval after the
// first.
func WithProbeTimeout(d time.Duration) ProberOption {
	return func(c *proberConfig) { c.timeout = d }
}

// WithProbeBackoff sets the longest pause between probes during an outage
// (default DefaultProbeBackoff; at least the interval).
func WithProbeBackoff(d time.Duration) ProberOption {
	return func(c *proberConfig) { c.backoff = d }
}

// WithHeartbeatTTL sets how long a process counts as alive after its last
// heartbeat (default DefaultHeartbeatTTL; more than the interval).
func WithHeartbeatTTL(d time.Duration) ProberOption {
	return func(c *proberConfig) { c.ttl = d }
}

// WithProberPrefix sets the key prefix of the heartbeat key (default
// DefaultPrefix), the gates' prefix.
func WithProberPrefix(prefix string) ProberOption {
	return func(c *proberConfig) { c.prefix = prefix }
}

// WithProberMode says what the gates do during an outage (FailOpen by
// default), for the outage's log lines.
func WithProberMode(m Mode) ProberOption {
	return func(c *proberConfig) { c.mode = m }
}

// WithProberLogger sets the logger of the outage lines (default
// slog.Default()).
func WithProberLogger(l *slog.Logger) ProberOption {
	return func(c *proberConfig) { c.log = l }
}

// scriptHeartbeat records this process alive until now+ttl in one sorted
// set (member: process id, score: expiry in ms on the server's clock),
// drops the members whose expiry passed and returns how many are left. One
// key, so it runs on a cluster as on one node.
var scriptHeartbeat = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return redis.call('ZCARD', KEYS[1])
`)

// errOutage is the cause of the ErrUnreachable a gate returns at once
// while its prober reports an outage, when the outage's own cause is not
// known.
var errOutage = errors.New("outage in progress (the prober gets no answer from redis)")

// outageError is the cause of the ErrUnreachable a gate returns at once
// while its prober reports an outage: the error that started it — a probe
// that got no answer, or a reply with which Redis refused to serve (a
// replica's READONLY, a WRONGPASS), which an operator needs to see rather
// than "no answer". Built once per outage, so a refused call allocates no
// more than before. It quotes the cause but does not wrap it: a probe's
// timeout that started the outage is not this call's deadline, and
// errors.Is(err, context.DeadlineExceeded) must not say it is.
type outageError struct{ cause string }

func (e *outageError) Error() string { return "outage in progress, started by: " + e.cause }

// Prober is the one background watcher of a Redis per process (per
// gateway): every interval it runs one short script, with its own timeout,
// that also writes this process's heartbeat, and from its answers it
// decides when an outage starts and ends: two failed probes in a row (the
// second right after the first) start one, the first answer ends it. A
// silent (black-holed) Redis is seen as an outage within two probe
// intervals, where the callers' operations would only end at their own
// deadlines.
//
// The failover gates given WithProber follow it: during an outage no
// caller's operation goes to Redis — fail_open serves from the local
// fallback, fail_closed fails at once with ErrUnreachable — and only the
// prober's answer ends the outage. A caller's operation that finds Redis
// unreachable starts the outage at once (a second signal, faster than the
// next probe), and a gate operation of the prober's client that is retrying
// a reply with which Redis could not serve now (TRYAGAIN, READONLY, …)
// stops retrying once the outage starts.
//
// The heartbeats count the processes recently alive in Redis (Processes),
// from which a FleetQuota takes this process's share of each limit during an
// outage. Close stops the prober's goroutine.
type Prober struct {
	c    goredis.UniversalClient
	cfg  proberConfig
	id   string
	key  string
	addr string // the Redis address(es) the outage lines name

	down  atomic.Bool
	procs atomic.Int64 // processes alive at the last heartbeat, ≥ 1
	probes,
	failures atomic.Int64

	mu    sync.Mutex
	since time.Time                   // start of the outage in progress
	cause atomic.Pointer[outageError] // what started the outage in progress

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewProber returns a prober of c and starts its goroutine, whose first
// probe runs at once. Invalid options return an *ArgumentError. The probe
// timeout bounds a probe only when c lets a context deadline bound its
// commands (go-redis ContextTimeoutEnabled, as the gateway's own client
// does); otherwise a silent Redis holds a probe for c's read timeout.
func NewProber(c goredis.UniversalClient, opts ...ProberOption) (*Prober, error) {
	if c == nil {
		return nil, &ArgumentError{Name: "client", Value: "<nil>", Legal: "a goredis.UniversalClient"}
	}
	cfg := proberConfig{
		interval: DefaultProbeInterval, timeout: DefaultProbeTimeout,
		backoff: DefaultProbeBackoff, ttl: DefaultHeartbeatTTL, prefix: DefaultPrefix,
		mode: FailOpen,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case cfg.interval < time.Millisecond:
		return nil, &ArgumentError{Name: "probe interval", Value: cfg.interval.String(), Legal: "≥ 1ms"}
	case cfg.timeout <= 0 || 2*cfg.timeout > cfg.interval:
		return nil, &ArgumentError{Name: "probe timeout", Value: cfg.timeout.String(), Legal: "> 0 and ≤ half the probe interval " + cfg.interval.String()}
	case cfg.backoff < cfg.interval:
		return nil, &ArgumentError{Name: "probe backoff", Value: cfg.backoff.String(), Legal: "≥ the probe interval " + cfg.interval.String()}
	case cfg.ttl <= cfg.interval:
		return nil, &ArgumentError{Name: "heartbeat ttl", Value: cfg.ttl.String(), Legal: "> the probe interval " + cfg.interval.String()}
	case cfg.mode != FailOpen && cfg.mode != FailClosed:
		return nil, &ArgumentError{Name: "mode", Value: cfg.mode.String(), Legal: "FailOpen, FailClosed"}
	case cfg.prefix == "" || strings.ContainsAny(cfg.prefix, "{}"):
		return nil, &ArgumentError{Name: "prefix", Value: cfg.prefix, Legal: "non-empty, without '{' or '}'"}
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := &Prober{
		c: c, cfg: cfg, id: hex.EncodeToString(b[:]),
		key:  cfg.prefix + ":{pgw-fleet}:alive",
		addr: redisaddr.Of(c),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	p.procs.Store(1)
	if registrable(c) {
		probers.Store(processor(c), p)
	}
	go p.run()
	return p, nil
}

// Down reports whether an outage is in progress.
func (p *Prober) Down() bool { return p.down.Load() }

// Processes returns the number of processes alive in Redis at the last
// heartbeat that Redis answered, this one included (1 before the first).
// During an outage it keeps its last value.
func (p *Prober) Processes() int { return int(p.procs.Load()) }

// outageErr returns the cause of the outage in progress (outageError),
// errOutage when none is recorded.
func (p *Prober) outageErr() error {
	if e := p.cause.Load(); e != nil {
		return e
	}
	return errOutage
}

// Probes returns how many probes ran and how many of them failed.
func (p *Prober) Probes() (probes, failures int64) { return p.probes.Load(), p.failures.Load() }

// Interval returns the probe interval.
func (p *Prober) Interval() time.Duration { return p.cfg.interval }

// Close stops the prober and waits for its goroutine. The heartbeat is left
// to expire. Idempotent.
func (p *Prober) Close() {
	p.once.Do(func() {
		if registrable(p.c) {
			probers.CompareAndDelete(processor(p.c), p)
		}
		close(p.stop)
	})
	<-p.done
}

func (p *Prober) run() {
	defer close(p.done)
	pause := p.cfg.interval
	suspect := false // the last probe failed, outside an outage
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		switch err := p.probe(); {
		case err == nil:
			pause, suspect = p.cfg.interval, false
		case p.Down():
			pause = min(2*pause, p.cfg.backoff)
		case !suspect:
			// One failed probe may be a loaded machine: a second one, at
			// once, confirms the outage.
			pause, suspect = 0, true
		default:
			p.report(err)
			pause, suspect = p.cfg.interval, false
		}
		t.Reset(pause)
	}
}

// probe runs one heartbeat and books a success; it returns the error of a
// failed one.
func (p *Prober) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.timeout)
	defer cancel()
	p.probes.Add(1)
	ttl := strconv.FormatInt(p.cfg.ttl.Milliseconds(), 10)
	n, err := scriptHeartbeat.Run(ctx, p.c, []string{p.key}, p.id, ttl).Int64()
	if err != nil && ctx.Err() == nil {
		// A connection killed or reset since the last probe fails once;
		// a second try on another connection tells an outage from that,
		// within the same timeout.
		n, err = scriptHeartbeat.Run(ctx, p.c, []string{p.key}, p.id, ttl).Int64()
	}
	if err == nil {
		p.procs.Store(max(n, 1))
		p.recovered()
		return nil
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) && !notServed(err) {
		// Redis answered, with an error of its own (a script error): it
		// is reachable, and the gates will report it. (A reply with which
		// it refuses to serve — notServed: a replica's READONLY, an OOM, a
		// WRONGPASS — is an outage.)
		p.recovered()
		return nil
	}
	p.failures.Add(1)
	return err
}

// report starts an outage, if none is in progress, for err.
func (p *Prober) report(err error) {
	if p.down.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down.Load() {
		return
	}
	p.since = time.Now()
	cause := err
	if u := (*UnreachableError)(nil); errors.As(err, &u) && u.Err != nil {
		cause = u.Err // a caller's error: the gate's wrapping says it again
	}
	p.cause.Store(&outageError{cause: cause.Error()})
	p.down.Store(true)
	if p.cfg.mode == FailOpen {
		p.cfg.log.Warn("pgw: redis unreachable, gates serving from local fallbacks until it answers",
			"addr", p.addr, "mode", p.cfg.mode.String(), "err", err.Error())
		return
	}
	p.cfg.log.Warn("pgw: redis outage, gate operations fail at once until it answers",
		"addr", p.addr, "mode", p.cfg.mode.String(), "err", err.Error())
}

// recovered ends the outage in progress, if any.
func (p *Prober) recovered() {
	if !p.down.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down.Load() {
		return
	}
	p.down.Store(false)
	msg := "pgw: redis reachable again, gates back on redis"
	if p.cfg.mode == FailClosed {
		msg = "pgw: redis answers again, gate operations back on redis"
	}
	p.cfg.log.Info(msg, "addr", p.addr, "outage", time.Since(p.since).Round(time.Millisecond).String())
}

// WithProber makes the failover gate follow p: during p's outage no call
// goes to Redis, and only p ends it.
func WithProber(p *Prober) FailoverOption {
	return func(o *outage) { o.pr = p }
}
