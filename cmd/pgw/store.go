package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
)

// store is the Redis the gateways share, seen through the gates' own code:
// each scope's redis.Breaker reads and forces the records.
type store struct {
	c        goredis.UniversalClient
	prefix   string
	settings *config.Settings // nil: the environment holds no usable gateway configuration
	breakers map[string]*redis.Breaker
}

// connect builds the client (no I/O yet) and loads the gateway's
// configuration from the environment when it is there.
func connect(o *options, stderr io.Writer) (*store, error) {
	st := &store{prefix: o.prefix, breakers: map[string]*redis.Breaker{}}
	if s, err := config.FromEnv(); err == nil {
		d := s.WithDefaults()
		st.settings = &d
	} else if configured() {
		fmt.Fprintf(stderr, "pgw: note: the gateway configuration in the environment does not load, so default policies and no quota limits are used: %v\n", err)
	}
	opt, why := parseRedisURL(o.redisURL)
	if why != "" {
		return nil, fmt.Errorf("invalid %s: %s (legal: redis://[[user]:password@]host[:port][/db], rediss://…, unix:///path)", o.from["redis"], why)
	}
	if why := urlProblem(opt, o.cluster != ""); why != "" {
		return nil, fmt.Errorf("invalid %s: %s", o.from["redis"], why)
	}
	// Scripts are not idempotent: a lost reply must not apply them twice.
	opt.MaxRetries = -1
	// -timeout bounds the whole command: every command ends at its ctx's
	// deadline, not at go-redis's own dial and read timeouts, against a
	// Redis that accepts connections and never answers.
	opt.ContextTimeoutEnabled = true
	if o.cluster == "" {
		st.c = goredis.NewClient(opt)
		return st, nil
	}
	addrs, _ := seeds(o.cluster) // run checked them
	st.c = goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:      addrs,
		Username:   opt.Username,
		Password:   opt.Password,
		TLSConfig:  opt.TLSConfig,
		MaxRetries: -1,

		ContextTimeoutEnabled: true,
	})
	return st, nil
}

func (st *store) close() { _ = st.c.Close() }

// parseRedisURL returns go-redis's options for raw, or why raw is not a
// Redis URL. The value is a secret and both Go's URL parser and go-redis
// quote it, whole or in part, in their errors: only their words before the
// quote are kept. A URL without "//" after its scheme ("redis:pw@host") is
// refused: go-redis would read it as naming no host and dial the default
// address instead.
func parseRedisURL(raw string) (*goredis.Options, string) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		why := err.Error()
		if errors.As(err, &ue) {
			why = ue.Err.Error()
		}
		why, _, _ = strings.Cut(why, `"`)
		why, _, _ = strings.Cut(why, ":")
		if why = strings.TrimSpace(why); why == "" {
			why = "not a URL"
		}
		return nil, why
	}
	if u.Opaque != "" {
		return nil, "missing // after the scheme"
	}
	opt, err := goredis.ParseURL(raw)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), "redis: ")
		why, _, _ = strings.Cut(why, ":")
		return nil, why
	}
	return opt, ""
}

// urlProblem says what a Redis URL go-redis parsed still gets wrong, as the
// gateway's configuration does: a port no dial can use, or, for a cluster,
// a database other than 0 (Redis Cluster has no other, and its client
// would silently use 0). "" when there is nothing.
func urlProblem(opt *goredis.Options, cluster bool) string {
	if opt.Network != "unix" {
		if _, port, err := net.SplitHostPort(opt.Addr); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return "port " + port + " is not in [1, 65535]"
			}
		}
	}
	if cluster && opt.DB != 0 {
		return "database " + strconv.Itoa(opt.DB) + " with a cluster (legal: database 0 or none: Redis Cluster has no other; keep deployments apart with -prefix)"
	}
	return ""
}

// seeds splits a cluster seed list, host:port,…, trimming spaces; ok is
// false when an item is not a host:port (a Redis URL, a port out of range).
func seeds(list string) (addrs []string, ok bool) {
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || strings.ContainsAny(host, "@/?#") {
			return nil, false
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, false
		}
		addrs = append(addrs, a)
	}
	return addrs, true
}

// configured reports whether the environment means to hold a gateway
// configuration (some {SCOPE}__SOURCES is set); without one, status quietly
// uses the defaults.
func configured() bool {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "__SOURCES") {
			return true
		}
	}
	return false
}

// scope returns the configured scope called name (upper-case), if any.
func (st *store) scope(name string) (config.ScopeSettings, bool) {
	if st.settings == nil {
		return config.ScopeSettings{}, false
	}
	return st.settings.Scope(name)
}

// policy is the scope's configured breaker policy, else the defaults.
func (st *store) policy(scope string) gate.Policy {
	if sc, ok := st.scope(scope); ok {
		return sc.Policy()
	}
	return gate.Policy{}.WithDefaults()
}

// limits are the source's configured quota limits; ok false when unknown.
func (st *store) limits(scope, source string) (gate.Limits, bool) {
	sc, ok := st.scope(scope)
	if !ok {
		return gate.Limits{}, false
	}
	src, ok := sc.Source(source)
	if !ok {
		return gate.Limits{}, false
	}
	return src.Limits(), true
}

func (st *store) breaker(scope string) (*redis.Breaker, error) {
	if b := st.breakers[scope]; b != nil {
		return b, nil
	}
	b, err := redis.NewBreaker(st.c, scope, st.policy(scope), redis.WithPrefix(st.prefix))
	if err != nil {
		return nil, err
	}
	st.breakers[scope] = b
	return b, nil
}

func (st *store) quotaKeys(scope, source string) []string {
	q, err := redis.NewQuota(st.c, scope, nil, redis.WithPrefix(st.prefix))
	if err != nil { // scope and prefix were checked already
		panic(err)
	}
	return q.Keys(source)
}

// sourceRef names one source of one scope; Scope is upper-case.
type sourceRef struct{ Scope, Source string }

// found is what a scan found of one source: which of its keys exist.
type found struct {
	breaker, quota bool
}

// scan lists every source with a key under the prefix — on every master of
// a cluster — and every source the configuration names.
func (st *store) scan(ctx context.Context) (map[sourceRef]*found, error) {
	out := map[sourceRef]*found{}
	var mu sync.Mutex
	head := st.prefix + ":{"
	pattern := globEscape(head) + "*"
	scanNode := func(ctx context.Context, c goredis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			ref, kind, ok := parseKey(head, it.Val())
			if !ok {
				continue
			}
			mu.Lock()
			f := out[ref]
			if f == nil {
				f = &found{}
				out[ref] = f
			}
			switch kind {
			case "cb", "probes":
				f.breaker = true
			case "quota", "inflight":
				f.quota = true
			}
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := st.c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return scanNode(ctx, n) })
	} else {
		err = scanNode(ctx, st.c)
	}
	if err != nil {
		return nil, fmt.Errorf("scanning keys %s: %w", pattern, err)
	}
	if st.settings != nil {
		for _, sc := range st.settings.Scopes {
			for _, src := range sc.Sources {
				ref := sourceRef{Scope: strings.ToUpper(sc.Name), Source: src.Name}
				if out[ref] == nil {
					out[ref] = &found{}
				}
			}
		}
	}
	return out, nil
}

// parseKey splits <prefix>:{<scope>:<source>}:<kind>.
func parseKey(head, key string) (ref sourceRef, kind string, ok bool) {
	rest, ok := strings.CutPrefix(key, head)
	if !ok {
		return ref, "", false
	}
	end := strings.LastIndex(rest, "}:")
	if end < 0 {
		return ref, "", false
	}
	scope, source, ok := strings.Cut(rest[:end], ":")
	if !ok || scope == "" || source == "" {
		return ref, "", false
	}
	return sourceRef{Scope: strings.ToUpper(scope), Source: source}, rest[end+2:], true
}

// globEscape quotes the glob metacharacters of a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// serverMicros is Redis's clock, as the scripts read it.
func (st *store) serverMicros(ctx context.Context) (int64, error) {
	t, err := st.c.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("reading the server time: %w", err)
	}
	return t.UnixMicro(), nil
}

// sortedRefs orders sources by scope, then source.
func sortedRefs(m map[sourceRef]*found) []sourceRef {
	return slices.SortedFunc(maps.Keys(m), func(a, b sourceRef) int {
		if c := strings.Compare(a.Scope, b.Scope); c != 0 {
			return c
		}
		return strings.Compare(a.Source, b.Source)
	})
}

func parseInt(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// dur renders a duration for the table: milliseconds below a second,
// tenths of a second below a minute, seconds above.
func dur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
