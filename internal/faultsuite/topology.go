package faultsuite

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Topology is the configuration every worker of a run shares: three scopes
// over two upstreams.
//
//   - CHAT over sources a (Upstream1) and b (Upstream2), CIRCUIT_OPEN=wait;
//   - EMBEDDING over source e (Upstream1), failing fast on open breakers;
//   - TOOL (driven with pgw.Call) over t1 (Upstream1) and t2 (Upstream2),
//     ToolInFlight calls each, waiting on full quotas and open breakers.
//
// Every source has MAX_IN_FLIGHT (so in-flight leases are taken and given
// back on every call) and CHAT's a TPM (so permits are settled).
type Topology struct {
	// Backend is PGW_BREAKER_BACKEND: "redis" or "memory".
	Backend string
	// RedisAddr is Redis's host:port; ReadTimeout, when set, goes into
	// PGW_REDIS_URL as read_timeout (the gate operations' timeout).
	RedisAddr   string
	ReadTimeout time.Duration
	// Prefix is PGW_REDIS_PREFIX; Down is PGW_REDIS_DOWN.
	Prefix string
	Down   string
	// Upstream1 and Upstream2 are the fake upstreams' base URLs.
	Upstream1, Upstream2 string
	// StallWindow, Poll, FailureThreshold, Cooldown and MaxCooldown apply to
	// every scope; Timeout to every source.
	StallWindow      time.Duration
	Poll             time.Duration
	FailureThreshold int
	Cooldown         time.Duration
	MaxCooldown      time.Duration
	Timeout          time.Duration
	// ToolInFlight is each TOOL source's MAX_IN_FLIGHT; WideInFlight that of
	// the other sources.
	ToolInFlight int
	WideInFlight int
}

// Env renders t as environment keys (config.FromMap).
func (t Topology) Env() map[string]string {
	env := map[string]string{
		"PGW_BREAKER_BACKEND": t.Backend,
		"PGW_REDIS_PREFIX":    t.Prefix,
		"PGW_REDIS_DOWN":      t.Down,
		"PGW_SCOPES":          ScopeChat + "," + ScopeEmbed + "," + ScopeTool,
		"CHAT__SOURCES":       "a,b",
		"CHAT__CIRCUIT_OPEN":  "wait",
		"EMBEDDING__SOURCES":  "e",
		"TOOL__SOURCES":       "t1,t2",
		"TOOL__CIRCUIT_OPEN":  "wait",
		"TOOL__QUOTA_FULL":    "wait",
	}
	if t.RedisAddr != "" {
		u := "redis://" + t.RedisAddr + "/0"
		if t.ReadTimeout > 0 {
			u += "?read_timeout=" + url.QueryEscape(t.ReadTimeout.String())
		}
		env["PGW_REDIS_URL"] = u
	}
	for _, scope := range []string{ScopeChat, ScopeEmbed, ScopeTool} {
		scopeTimings(env, scope, t.StallWindow, t.Poll, t.FailureThreshold, t.Cooldown, t.MaxCooldown)
	}
	source := func(scope, name, base string, limits map[string]int) {
		sourceEnv(env, scope, name, base, t.Timeout, limits)
	}
	chat := map[string]int{"MAX_IN_FLIGHT": t.WideInFlight, "TPM": 10_000_000}
	source(ScopeChat, "a", t.Upstream1, chat)
	source(ScopeChat, "b", t.Upstream2, chat)
	source(ScopeEmbed, "e", t.Upstream1, map[string]int{"MAX_IN_FLIGHT": t.WideInFlight, "RPM": 1_000_000})
	tool := map[string]int{"MAX_IN_FLIGHT": t.ToolInFlight}
	source(ScopeTool, "t1", t.Upstream1, tool)
	source(ScopeTool, "t2", t.Upstream2, tool)
	return env
}

func seconds(d time.Duration) string { return fmt.Sprint(d.Seconds()) }

// scopeTimings sets scope's stall window, poll interval and breaker keys.
func scopeTimings(env map[string]string, scope string, stall, poll time.Duration, threshold int, cooldown, maxCooldown time.Duration) {
	env[scope+"__STALL_WINDOW_S"] = seconds(stall)
	env[scope+"__POLL_INTERVAL_S"] = seconds(poll)
	env[scope+"__FAILURE_THRESHOLD"] = strconv.Itoa(threshold)
	env[scope+"__COOLDOWN_S"] = seconds(cooldown)
	env[scope+"__MAX_COOLDOWN_S"] = seconds(maxCooldown)
}

// sourceEnv sets the keys of source name in scope: its base URL, timeout
// and limits (key → value, e.g. "RPM" → 600).
func sourceEnv(env map[string]string, scope, name, base string, timeout time.Duration, limits map[string]int) {
	k := scope + "__" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "__"
	env[k+"BASE_URL"] = base
	env[k+"TIMEOUT_S"] = seconds(timeout)
	for key, v := range limits {
		env[k+key] = strconv.Itoa(v)
	}
}

// SlotTopology is the configuration of a run on a Redis Cluster whose
// sources are the ones a fault on a hash slot hits: one source per scope,
// each with its own upstream, and (the caller picks the names, SourceInSlot)
// all three keeping their keys in one slot.
//
//   - TOOL (driven with pgw.Call) over Hot (UpstreamHot), HotInFlight calls
//     at once and an attempt long enough for the load to keep them all busy;
//   - EMBEDDING over Paced (UpstreamPaced), PacedRPM requests a minute;
//   - CHAT over Flaky (UpstreamFlaky), whose upstream the caller makes fail
//     in phases, so its breaker opens, probes and closes.
//
// Every scope fails fast on a full quota and an open breaker, so a call
// ends as a success, a quota or breaker rejection, or (Flaky's failures)
// unavailable — never as a wait that ran out.
type SlotTopology struct {
	// ClusterAddrs are the cluster's seeds (PGW_REDIS_CLUSTER_ADDRS).
	ClusterAddrs []string
	// Prefix is PGW_REDIS_PREFIX; Down is PGW_REDIS_DOWN.
	Prefix string
	Down   string
	// Hot, Paced and Flaky are the source names.
	Hot, Paced, Flaky string
	// UpstreamHot, UpstreamPaced and UpstreamFlaky are their upstreams'
	// base URLs.
	UpstreamHot, UpstreamPaced, UpstreamFlaky string
	// HotInFlight is Hot's MAX_IN_FLIGHT; PacedRPM is Paced's RPM.
	HotInFlight int
	PacedRPM    int
	// StallWindow, Poll, FailureThreshold, Cooldown and MaxCooldown apply to
	// every scope; Timeout to every source.
	StallWindow      time.Duration
	Poll             time.Duration
	FailureThreshold int
	Cooldown         time.Duration
	MaxCooldown      time.Duration
	Timeout          time.Duration
}

// Env renders t as environment keys (config.FromMap).
func (t SlotTopology) Env() map[string]string {
	env := map[string]string{
		"PGW_BREAKER_BACKEND":     "redis",
		"PGW_REDIS_CLUSTER_ADDRS": strings.Join(t.ClusterAddrs, ","),
		"PGW_REDIS_PREFIX":        t.Prefix,
		"PGW_REDIS_DOWN":          t.Down,
		"PGW_SCOPES":              ScopeChat + "," + ScopeEmbed + "," + ScopeTool,
		"CHAT__SOURCES":           t.Flaky,
		"EMBEDDING__SOURCES":      t.Paced,
		"TOOL__SOURCES":           t.Hot,
	}
	for _, scope := range []string{ScopeChat, ScopeEmbed, ScopeTool} {
		env[scope+"__CIRCUIT_OPEN"] = "fail_fast"
		env[scope+"__QUOTA_FULL"] = "fail_fast"
		scopeTimings(env, scope, t.StallWindow, t.Poll, t.FailureThreshold, t.Cooldown, t.MaxCooldown)
	}
	source := func(scope, name, base string, limits map[string]int) {
		sourceEnv(env, scope, name, base, t.Timeout, limits)
	}
	source(ScopeTool, t.Hot, t.UpstreamHot, map[string]int{"MAX_IN_FLIGHT": t.HotInFlight})
	source(ScopeEmbed, t.Paced, t.UpstreamPaced, map[string]int{"RPM": t.PacedRPM})
	// Flaky carries a wide MAX_IN_FLIGHT so that its calls take and give
	// back in-flight leases too, through the same combined scripts.
	source(ScopeChat, t.Flaky, t.UpstreamFlaky, map[string]int{"MAX_IN_FLIGHT": 256})
	return env
}
