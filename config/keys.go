package config

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

// The tables below are the single list of keys: parsing, validation of
// Settings built in code, and unknown-key detection all walk them.

// Keys that are not fields of a table.
const (
	keyScopes  = "PGW_SCOPES"
	keySources = "SOURCES"
)

var globalFields = []field[Settings]{
	enumField("PGW_BREAKER_BACKEND", func(s *Settings) *Backend { return &s.BreakerBackend },
		BackendMemory, BackendRedis, BackendNoop),
	enumField("PGW_QUOTA_BACKEND", func(s *Settings) *Backend { return &s.QuotaBackend },
		BackendMemory, BackendRedis),
	{
		suffix: "PGW_REDIS_URL",
		legal:  legalRedisURL,
		load: func(s *Settings, raw string) bool {
			raw = strings.TrimSpace(raw)
			if checkRedisURL(raw) != "" {
				return false
			}
			s.Redis.URL = NewSecret(raw)
			return true
		},
		check: func(s *Settings) (string, bool) {
			u := s.Redis.URL.Reveal()
			return redactSecretURL(u), checkRedisURL(u) == ""
		},
		show:   func(raw string) string { return redactSecretURL(strings.TrimSpace(raw)) },
		detail: func(raw string) string { return checkRedisURL(strings.TrimSpace(raw)) },
	},
	{
		suffix: "PGW_REDIS_CLUSTER_ADDRS",
		legal:  "comma-separated host:port list, e.g. 10.0.0.1:7000,10.0.0.2:7000 (credentials and options go in PGW_REDIS_URL)",
		load: func(s *Settings, raw string) bool {
			addrs := splitList(raw)
			if !validAddrs(addrs) {
				return false
			}
			s.Redis.ClusterAddrs = addrs
			return true
		},
		check: func(s *Settings) (string, bool) {
			a := s.Redis.ClusterAddrs
			return showAddrs(strings.Join(a, ",")), len(a) == 0 || validAddrs(a)
		},
		show: showAddrs,
	},
	{
		suffix: "PGW_REDIS_PREFIX",
		legal:  "non-empty printable ASCII without spaces, '{' or '}'",
		load: func(s *Settings, raw string) bool {
			if !validPrefix(raw) {
				return false
			}
			s.Redis.Prefix = raw
			return true
		},
		check: func(s *Settings) (string, bool) { return s.Redis.Prefix, validPrefix(s.Redis.Prefix) },
	},
	enumField("PGW_REDIS_DOWN", func(s *Settings) *RedisDown { return &s.Redis.Down },
		RedisFailOpen, RedisFailClosed),
	durationField(keyProbeInterval, func(s *Settings) *time.Duration { return &s.Redis.ProbeInterval }),
	durationField(keyProbeTimeout, func(s *Settings) *time.Duration { return &s.Redis.ProbeTimeout }),
	durationField(keyProbeBackoff, func(s *Settings) *time.Duration { return &s.Redis.ProbeBackoff }),
	durationField(keyHeartbeatTTL, func(s *Settings) *time.Duration { return &s.Redis.HeartbeatTTL }),
}

// The prober's keys, which validate also checks against each other.
const (
	keyProbeInterval = "PGW_REDIS_PROBE_INTERVAL_S"
	keyProbeTimeout  = "PGW_REDIS_PROBE_TIMEOUT_S"
	keyProbeBackoff  = "PGW_REDIS_PROBE_BACKOFF_S"
	keyHeartbeatTTL  = "PGW_REDIS_HEARTBEAT_TTL_S"
)

var scopeFields = []field[ScopeSettings]{
	enumField("QUOTA_FULL", func(s *ScopeSettings) *Mode { return &s.QuotaFull }, ModeWait, ModeFailFast),
	enumField("CIRCUIT_OPEN", func(s *ScopeSettings) *Mode { return &s.CircuitOpen }, ModeWait, ModeFailFast),
	intField("MAX_ATTEMPTS", func(s *ScopeSettings) *int { return &s.MaxAttempts }, 1, maxCount, ""),
	durationField("STALL_WINDOW_S", func(s *ScopeSettings) *time.Duration { return &s.StallWindow }),
	durationField("POLL_INTERVAL_S", func(s *ScopeSettings) *time.Duration { return &s.PollInterval }),
	intField("FAILURE_THRESHOLD", func(s *ScopeSettings) *int { return &s.FailureThreshold }, 1, maxCount, ""),
	durationField("COOLDOWN_S", func(s *ScopeSettings) *time.Duration { return &s.Cooldown }),
	durationField("MAX_COOLDOWN_S", func(s *ScopeSettings) *time.Duration { return &s.MaxCooldown }),
	durationField("PROBE_TTL_S", func(s *ScopeSettings) *time.Duration { return &s.ProbeTTL }),
	hedgeFields[0], // BALANCE
	hedgeFields[1], // HEDGE_AFTER_S
	hedgeFields[2], // HEDGE_AFTER
	hedgeFields[3], // HEDGE_BUDGET
	hedgeFields[4], // HEDGE_MAX
}

var sourceFields = []field[Source]{
	{
		suffix: "BASE_URL",
		legal:  "absolute http:// or https:// URL with a host, without user info or #fragment",
		load: func(s *Source, raw string) bool {
			raw = strings.TrimSpace(raw)
			if !validBaseURL(raw) {
				return false
			}
			s.BaseURL = raw
			return true
		},
		check: func(s *Source) (string, bool) {
			return redactURL(s.BaseURL), s.BaseURL == "" || validBaseURL(s.BaseURL)
		},
		show:   func(raw string) string { return redactURL(strings.TrimSpace(raw)) },
		detail: baseURLDetail,
	},
	{
		suffix: "API_KEY",
		legal:  "any text without control characters or surrounding spaces; empty for none",
		load: func(s *Source, raw string) bool {
			if hasControl(raw) {
				return false
			}
			s.APIKey = NewSecret(raw)
			return true
		},
		check: func(s *Source) (string, bool) { return s.APIKey.String(), !hasControl(s.APIKey.Reveal()) },
		show:  func(string) string { return Redacted },
	},
	{
		suffix: "MODEL",
		legal:  "any text",
		load:   func(s *Source, raw string) bool { s.Model = raw; return true },
		check:  func(s *Source) (string, bool) { return s.Model, true },
	},
	durationField("TIMEOUT_S", func(s *Source) *time.Duration { return &s.Timeout }),
	rateField("RPM", func(s *Source) *int { return &s.RPM }),
	rateField("TPM", func(s *Source) *int { return &s.TPM }),
	intField("MAX_IN_FLIGHT", func(s *Source) *int { return &s.MaxInFlight }, 0, gate.MaxInFlightLimit, "; 0 = unlimited"),
	intField("WEIGHT", func(s *Source) *int { return &s.Weight }, 1, maxWeight, ""),
	intField("PRIORITY", func(s *Source) *int { return &s.Priority }, -maxCount, maxCount, "; lower is tried first"),
	intField("BATCH_SIZE", func(s *Source) *int { return &s.BatchSize }, 0, maxCount, "; 0 = no split"),
	intField("MAX_TOKENS", func(s *Source) *int { return &s.MaxTokens }, 0, maxCount, "; 0 = the provider's default"),
	enumField("PROVIDER", func(s *Source) *Provider { return &s.Provider },
		ProviderOpenAI, ProviderAzure, ProviderAnthropic),
	boolField("LIMITS_FROM_HEADERS", func(s *Source) *bool { return &s.LimitsFromHeaders }),
	accountField("ORGANIZATION", func(s *Source) *string { return &s.Organization }),
	accountField("PROJECT", func(s *Source) *string { return &s.Project }),
}

// legalAccount is the legal text of ORGANIZATION and PROJECT.
const legalAccount = "any text without control characters or surrounding spaces, only with PROVIDER=openai; unset for none"

// accountField is ORGANIZATION or PROJECT: text that goes into a request
// header, so without control characters, and only for an openai source
// (validate checks the provider). Empty is illegal: unset means none.
func accountField(suffix string, ptr func(*Source) *string) field[Source] {
	return field[Source]{
		suffix: suffix,
		legal:  legalAccount,
		load: func(s *Source, raw string) bool {
			if raw == "" || hasControl(raw) {
				return false
			}
			*ptr(s) = raw
			return true
		},
		check: func(s *Source) (string, bool) { v := *ptr(s); return v, !hasControl(v) },
	}
}

// rateField is RPM or TPM: an integer key whose legal text is the whole
// legal set (legalRate), also when the text is no integer at all; the values
// in range that the quota gates cannot count exactly are reported by
// validate, with the same text.
func rateField(suffix string, ptr func(*Source) *int) field[Source] {
	f := intField(suffix, ptr, 0, maxCount, "")
	f.legal = legalRate
	return f
}

const legalRedisURL = "go-redis URL: redis://[[user]:password@]host[:port][/db][?options], rediss://… or unix:///path"

// checkRedisURL returns "" for a URL go-redis accepts, else why not. The
// reason never holds any part of the URL: url.Parse errors quote it, and
// go-redis errors quote the offending part ("invalid URL path: /:pw@h"), so
// only go-redis's words before the quoted part are kept.
func checkRedisURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL"
	}
	if u.Opaque != "" {
		// go-redis reads "redis:pw@h" as a URL without a host and dials
		// the default address instead.
		return "missing // after the scheme"
	}
	if _, err := goredis.ParseURL(raw); err != nil {
		why := strings.TrimPrefix(err.Error(), "redis: ")
		why, _, _ = strings.Cut(why, ":")
		return why
	}
	if u.Scheme != "unix" {
		return portProblem(u)
	}
	return ""
}

// legalClusterDB is what PGW_REDIS_URL may name as its database when
// PGW_REDIS_CLUSTER_ADDRS selects Redis Cluster.
const legalClusterDB = "with PGW_REDIS_CLUSTER_ADDRS set, a go-redis URL naming database 0 or none: " +
	"Redis Cluster has no other database (keep deployments apart with PGW_REDIS_PREFIX)"

// clusterDB reports the Redis URL of r when it names a database other than
// 0 while r selects Redis Cluster, which would silently use database 0.
func clusterDB(r RedisSettings) (shown string, bad bool) {
	if len(r.ClusterAddrs) == 0 {
		return "", false
	}
	o, err := goredis.ParseURL(r.URL.Reveal())
	if err != nil || o.DB == 0 {
		return "", false
	}
	return redactSecretURL(r.URL.Reveal()), true
}

func validBaseURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" && u.Opaque == "" &&
		u.User == nil && u.Fragment == "" && !strings.Contains(raw, "#") && portProblem(u) == ""
}

// baseURLDetail says what is wrong with a BASE_URL whose only fault is
// its port or its missing host name, which the legal text alone would not
// make plain; "" otherwise.
func baseURLDetail(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Hostname() == "" {
		return "no host name before the port"
	}
	return portProblem(u)
}

// portProblem says why u's port cannot be dialled ("" when it has none, or
// one in [1, 65535]): url.Parse accepts any digits there.
func portProblem(u *url.URL) string {
	p := u.Port()
	if p == "" {
		return ""
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "port " + p + " is not in [1, 65535]"
	}
	return ""
}

// redactSecretURL shows the value of a key that is a secret as a whole
// (PGW_REDIS_URL): an absolute URL without its user info and query, and
// anything else — a mistyped scheme ("redis//:pw@h"), a bare password — not
// at all.
func redactSecretURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" || raw != strings.TrimSpace(raw) {
		if raw == "" {
			return ""
		}
		return Redacted
	}
	return redactURL(raw)
}

// redactURL shows a URL without its user info and query, which may hold
// credentials; text that does not parse and holds an '@' or '?' is hidden
// whole, and so is a result that still holds an '@' (user info that did not
// parse as such, as in "https//u:pw@h").
func redactURL(raw string) string {
	s := redactURLParts(raw)
	if strings.Contains(strings.Replace(s, Redacted+"@", "", 1), "@") {
		return Redacted
	}
	return s
}

func redactURLParts(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(raw, "@?") {
			return Redacted
		}
		return clip(raw)
	}
	hidUser := u.User != nil
	hidQuery := u.RawQuery != "" || u.ForceQuery
	if !hidUser && !hidQuery {
		return clip(raw)
	}
	u.User, u.RawQuery, u.ForceQuery = nil, "", false
	s := u.String()
	if hidQuery {
		s += "?" + Redacted
	}
	return clip(withUser(s, u.Scheme, hidUser))
}

func withUser(s, scheme string, hidUser bool) string {
	if !hidUser {
		return s
	}
	prefix := scheme + "://"
	if !strings.HasPrefix(s, prefix) {
		return Redacted
	}
	return prefix + Redacted + "@" + s[len(prefix):]
}

// showAddrs shows a PGW_REDIS_CLUSTER_ADDRS value for a Problem. A seed
// is host:port, but a Redis URL pasted there carries its password: an item
// that looks like a URL, or holds an '@' or a '?', is shown as redactURL
// shows it (without user info and query), or hidden whole.
func showAddrs(raw string) string {
	items := strings.Split(raw, ",")
	for i, it := range items {
		if strings.ContainsAny(it, "@?") || strings.Contains(it, "://") {
			items[i] = redactURL(strings.TrimSpace(it))
		}
	}
	return clip(strings.Join(items, ","))
}

func validAddrs(addrs []string) bool {
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || strings.ContainsAny(host, "@/?#") {
			return false
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return false
		}
	}
	return len(addrs) > 0
}

func validPrefix(p string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c > '~' || c == '{' || c == '}' {
			return false
		}
	}
	return true
}
