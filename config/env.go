package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/kelseyhightower/envconfig"
)

// globalEnv holds the raw text of the fixed PGW_ keys. The struct tags are the
// one statement of their names and static defaults: envconfig reads them in
// FromEnv, readGlobals reads them for FromLookup and FromMap. Fields are
// *string so that "unset" (nil) and "set to the empty string" differ, and so
// that envconfig cannot stop at the first bad value: every value is checked
// afterwards, all problems together.
type globalEnv struct {
	BreakerBackend    *string `envconfig:"PGW_BREAKER_BACKEND" default:"memory"`
	QuotaBackend      *string `envconfig:"PGW_QUOTA_BACKEND"`
	RedisURL          *string `envconfig:"PGW_REDIS_URL" default:"redis://127.0.0.1:6379/0"`
	RedisClusterAddrs *string `envconfig:"PGW_REDIS_CLUSTER_ADDRS"`
	RedisPrefix       *string `envconfig:"PGW_REDIS_PREFIX" default:"pgw"`
	RedisDown         *string `envconfig:"PGW_REDIS_DOWN" default:"fail_open"`
	// The prober's defaults follow its interval (RedisSettings), so they
	// are filled in by WithDefaults, not here.
	RedisProbeInterval *string `envconfig:"PGW_REDIS_PROBE_INTERVAL_S"`
	RedisProbeTimeout  *string `envconfig:"PGW_REDIS_PROBE_TIMEOUT_S"`
	RedisProbeBackoff  *string `envconfig:"PGW_REDIS_PROBE_BACKOFF_S"`
	RedisHeartbeatTTL  *string `envconfig:"PGW_REDIS_HEARTBEAT_TTL_S"`
	Scopes             *string `envconfig:"PGW_SCOPES" default:"CHAT,EMBEDDING,OCR"`
}

// LookupFunc looks up one key, like os.LookupEnv: the value and whether the
// key is set at all.
type LookupFunc func(key string) (value string, ok bool)

// FromEnv reads Settings from the process environment: the PGW_ keys through
// envconfig, the per-scope and per-source keys (whose names depend on
// PGW_SCOPES and {SCOPE}__SOURCES) through os.LookupEnv. It also reports
// unknown keys under a listed scope's prefix and near misses of PGW_ keys
// (typos such as CHAT__CIRCUT_OPEN), which FromLookup cannot see.
//
// The Settings returned have every default filled in and pass Validate; any
// problem is returned as one error listing every bad key, which errors.As
// turns into a *pgw.ConfigError.
func FromEnv() (*Settings, error) {
	return FromEnvRequiring()
}

// readEnvGlobals reads the PGW_ keys through envconfig.
func readEnvGlobals() (globalEnv, error) {
	var g globalEnv
	if err := envconfig.Process("", &g); err != nil {
		// Every field is a *string, which envconfig cannot fail to set.
		return g, fmt.Errorf("pgw/config: reading the environment: %w", err)
	}
	return g, nil
}

// envNames lists the keys of the process environment.
func envNames() []string {
	names := make([]string, 0, 64)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// FromLookup reads Settings through lookup, which answers like os.LookupEnv.
// It is FromEnv's parser without the environment, for tests and for callers
// with their own source of keys; having no list of the keys that are set, it
// cannot report unknown keys (FromMap can).
//
// A key set to the empty string is set: for __API_KEY and __MODEL that means
// empty, for every other key it is an error naming the legal values (unset
// the key to get its default). Spaces around values and list items are
// trimmed, except in __API_KEY (where they are an error) and __MODEL (kept).
func FromLookup(lookup LookupFunc) (*Settings, error) {
	return load(readGlobals(lookup).lookup(), lookup, nil, nil)
}

// FromMap reads Settings from env, a map of key to value, as FromEnv reads
// the environment, including the unknown-key report.
func FromMap(env map[string]string) (*Settings, error) {
	lookup := func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	return load(readGlobals(lookup).lookup(), lookup, names, nil)
}

// readGlobals fills a globalEnv the way envconfig.Process does: the key if
// set (even to ""), else the default tag if any.
func readGlobals(lookup LookupFunc) globalEnv {
	var g globalEnv
	v := reflect.ValueOf(&g).Elem()
	for i := range v.NumField() {
		tag := v.Type().Field(i).Tag
		raw, ok := lookup(tag.Get("envconfig"))
		if !ok {
			raw, ok = tag.Lookup("default")
		}
		if ok {
			v.Field(i).Set(reflect.ValueOf(&raw))
		}
	}
	return g
}

// lookup answers for the keys of g.
func (g globalEnv) lookup() LookupFunc {
	v := reflect.ValueOf(g)
	vals := make(map[string]string, v.NumField())
	for i := range v.NumField() {
		if p := v.Field(i).Interface().(*string); p != nil {
			vals[v.Type().Field(i).Tag.Get("envconfig")] = *p
		}
	}
	return func(k string) (string, bool) {
		s, ok := vals[k]
		return s, ok
	}
}

// load is the parser shared by FromEnv, FromLookup and FromMap. globals
// answers for the PGW_ keys, lookup for the others; names, when not nil, are
// all the keys that are set, for the unknown-key report; reqs are the keys
// the caller requires.
func load(globals, lookup LookupFunc, names []string, reqs []Requirement) (*Settings, error) {
	var s Settings
	var ps problems
	for _, f := range globalFields {
		if raw, ok := globals(f.suffix); ok && !f.load(&s, raw) {
			ps.add(f.suffix, f.shown(raw), f.legalFor(raw))
		}
	}
	rawScopes, _ := globals(keyScopes)
	listed := parseScopes(rawScopes, &ps)
	scopesBad := ps.has(keyScopes)
	for _, name := range listed {
		prefix := name + "__"
		rawSources, active := lookup(prefix + keySources)
		if !active {
			continue
		}
		sc := ScopeSettings{Name: name}
		loadFields(scopeFields, &sc, prefix, lookup, &ps)
		for _, srcName := range parseSources(prefix+keySources, rawSources, &ps) {
			src := Source{Name: srcName}
			loadFields(sourceFields, &src, prefix+Key(srcName)+"__", lookup, &ps)
			sc.Sources = append(sc.Sources, src)
		}
		s.Scopes = append(s.Scopes, sc)
	}
	if len(listed) > 0 && len(s.Scopes) == 0 {
		ps.add(keyScopes, clip(rawScopes), legalNoScope+"; none of "+
			strings.Join(suffixed(listed, "__"+keySources), ", ")+" is set")
	}
	if names != nil {
		reportUnknown(names, listed, scopesBad, s.Scopes, &ps)
	}

	eff := s.WithDefaults()
	// The checks that span keys (MAX_COOLDOWN_S ≥ COOLDOWN_S, …) run here,
	// as for Settings built in code. A key already reported while parsing
	// is not reported twice.
	var vs problems
	validate(eff, &vs)
	require(eff, reqs, &vs)
	for _, p := range vs.list {
		if !ps.has(p.Key) {
			ps.list = append(ps.list, p)
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return &eff, nil
}

func loadFields[T any](fs []field[T], t *T, prefix string, lookup LookupFunc, ps *problems) {
	for _, f := range fs {
		key := prefix + f.suffix
		if raw, ok := lookup(key); ok && !f.load(t, raw) {
			ps.add(key, f.shown(raw), f.legalFor(raw))
		}
	}
}

// parseScopes returns the valid, distinct names of PGW_SCOPES.
func parseScopes(raw string, ps *problems) []string {
	var out []string
	for _, name := range splitList(raw) {
		switch {
		case name == "":
			ps.add(keyScopes, clip(raw), "comma-separated scope names, none empty")
		case !validScopeName(name):
			ps.add(keyScopes, clip(name), legalScopeName)
		case slices.Contains(out, name):
			ps.add(keyScopes, name, "scope names without repeats")
		default:
			out = append(out, name)
		}
	}
	return out
}

// parseSources returns the valid source names of a {SCOPE}__SOURCES value,
// keeping the first of names that share a key.
func parseSources(key, raw string, ps *problems) []string {
	var out []string
	byKey := map[string]string{}
	for _, name := range splitList(raw) {
		k := Key(name)
		other, dup := byKey[k]
		switch {
		case name == "":
			ps.add(key, clip(raw), "comma-separated source names, none empty")
		case !validSourceName(name):
			ps.add(key, clip(name), legalSourceName)
		case dup:
			ps.add(key, clip(other+","+name), legalDistinctKeys(k))
		default:
			byKey[k] = name
			out = append(out, name)
		}
	}
	return out
}

func suffixed(list []string, suffix string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s + suffix
	}
	return out
}
