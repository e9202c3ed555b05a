package config

import (
	"slices"
	"strconv"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
)

const (
	legalScopeName  = "upper-case letters and digits joined by single '_', starting with a letter (e.g. CHAT, MY_SCOPE)"
	legalSourceName = "letters and digits joined by single '-' or '_' (e.g. eu-1, openai_main)"
	legalNoScope    = "at least one listed scope with {SCOPE}__SOURCES set"
)

// Validate reports every invalid field of s, after defaults, as one error
// (errors.As: *pgw.ConfigError) whose problems are named by the
// environment key that sets the field. It returns nil when s is usable. It
// does not modify s.
func (s *Settings) Validate() error {
	var ps problems
	if s == nil {
		ps.add("Settings", "nil", "a non-nil *config.Settings")
		return ps.err()
	}
	validate(s.WithDefaults(), &ps)
	return ps.err()
}

// validate checks effective settings (defaults applied).
func validate(s Settings, ps *problems) {
	checkFields(globalFields, &s, "", ps)
	checkProber(s.Redis, ps)
	if shown, bad := clusterDB(s.Redis); bad && !ps.has("PGW_REDIS_URL") {
		ps.add("PGW_REDIS_URL", shown, legalClusterDB)
	}
	if len(s.Scopes) == 0 {
		ps.addUnset(keyScopes, legalNoScope)
	}
	scopes := make(map[string]bool, len(s.Scopes))
	for i := range s.Scopes {
		sc := &s.Scopes[i]
		switch {
		case !validScopeName(sc.Name):
			ps.add(keyScopes, clip(sc.Name), legalScopeName)
		case scopes[sc.Name]:
			ps.add(keyScopes, sc.Name, "scope names without repeats")
		}
		scopes[sc.Name] = true
		prefix := sc.Name + "__"
		checkFields(scopeFields, sc, prefix, ps)
		if sc.MaxCooldown < sc.Cooldown {
			ps.add(prefix+"MAX_COOLDOWN_S", formatSeconds(sc.MaxCooldown),
				"seconds ≥ "+prefix+"COOLDOWN_S ("+formatSeconds(sc.Cooldown)+")")
		}
		if len(sc.Sources) == 0 {
			ps.addUnset(prefix+keySources, "one or more source names")
		}
		keys := make(map[string]string, len(sc.Sources))
		for j := range sc.Sources {
			src := &sc.Sources[j]
			k := Key(src.Name)
			switch other, dup := keys[k]; {
			case !validSourceName(src.Name):
				ps.add(prefix+keySources, clip(src.Name), legalSourceName)
			case dup:
				ps.add(prefix+keySources, other+","+src.Name, legalDistinctKeys(k))
			}
			keys[k] = src.Name
			checkFields(sourceFields, src, prefix+k+"__", ps)
			if p := src.WithDefaults().Provider; p != ProviderOpenAI {
				for _, a := range []struct{ suffix, v string }{{"ORGANIZATION", src.Organization}, {"PROJECT", src.Project}} {
					if key := prefix + k + "__" + a.suffix; a.v != "" && !ps.has(key) {
						ps.add(key, clip(a.v), legalAccount+" (PROVIDER is "+string(p)+")")
					}
				}
			}
			// The quota gates count rates exactly, which bounds the large
			// ones; say so here rather than fail later in the gateway.
			for _, r := range []struct {
				suffix string
				v      int
			}{{"RPM", src.RPM}, {"TPM", src.TPM}} {
				if key := prefix + k + "__" + r.suffix; !gate.RateLegal(r.v) && !ps.has(key) {
					ps.add(key, strconv.Itoa(r.v), legalRate)
				}
			}
		}
	}
}

// checkProber checks the prober's durations against its interval, as
// redis.NewProber does: a failed probe and the one that confirms it must fit
// in one interval, the backoff may only lengthen the pause, and a heartbeat
// must outlive the pause before the next one.
//
// The interval itself must leave room for both: half of it holds a timeout
// of at least 0.001 s, and a heartbeat of at most 10000000 s outlasts it.
// An interval outside that room is the one problem reported, on its own
// key, rather than a problem of a timeout or heartbeat the user never set.
func checkProber(r RedisSettings, ps *problems) {
	iv := formatSeconds(r.ProbeInterval)
	if r.ProbeInterval < 2*minDuration || r.ProbeInterval >= maxDuration {
		if !ps.has(keyProbeInterval) {
			ps.add(keyProbeInterval, iv, legalProbeInterval)
		}
		return
	}
	if 2*r.ProbeTimeout > r.ProbeInterval && !ps.has(keyProbeTimeout) {
		ps.add(keyProbeTimeout, formatSeconds(r.ProbeTimeout),
			"seconds in [0.001, "+formatSeconds(r.ProbeInterval/2)+"]: at most half "+keyProbeInterval+" ("+iv+")")
	}
	if r.ProbeBackoff < r.ProbeInterval && !ps.has(keyProbeBackoff) {
		ps.add(keyProbeBackoff, formatSeconds(r.ProbeBackoff),
			"seconds in ["+iv+", 10000000]: at least "+keyProbeInterval+" ("+iv+")")
	}
	if r.HeartbeatTTL <= r.ProbeInterval && !ps.has(keyHeartbeatTTL) {
		ps.add(keyHeartbeatTTL, formatSeconds(r.HeartbeatTTL),
			"seconds in ("+iv+", 10000000]: more than "+keyProbeInterval+" ("+iv+")")
	}
}

// legalProbeInterval is the interval's room: see checkProber.
const legalProbeInterval = "seconds in [0.002, 10000000): half of it must hold " + keyProbeTimeout +
	" (at least 0.001) and " + keyHeartbeatTTL + " (at most 10000000) must outlast it"

// legalRate says which RPM and TPM values both the key (at most maxCount)
// and the quota gates (which count exactly) accept: one statement, one upper
// bound.
var legalRate = "0 for unlimited, 1.." + strconv.Itoa(gate.MaxPlainRate) + ", or a multiple of 1000 up to " +
	strconv.Itoa(maxCount/1000*1000) + "; other values cannot be counted exactly"

func legalDistinctKeys(k string) string {
	return "source names whose keys (upper-case, '-' → '_') differ; these both give " + k
}

func checkFields[T any](fs []field[T], t *T, prefix string, ps *problems) {
	for _, f := range fs {
		if shown, ok := f.check(t); !ok {
			ps.add(prefix+f.suffix, shown, f.legal)
		}
	}
}

// validScopeName: [A-Z][A-Z0-9]*(_[A-Z0-9]+)*, so that "__" only ever
// separates the parts of a key.
func validScopeName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	return joinedBy(s, func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }, "_")
}

// validSourceName: [A-Za-z0-9]+([-_][A-Za-z0-9]+)*.
func validSourceName(s string) bool {
	return joinedBy(s, func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}, "-_")
}

// joinedBy reports whether s is one or more runs of word bytes separated by
// single separator bytes.
func joinedBy(s string, word func(byte) bool, seps string) bool {
	if s == "" {
		return false
	}
	prevSep := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case word(c):
			prevSep = false
		case !prevSep && containsByte(seps, c):
			prevSep = true
		default:
			return false
		}
	}
	return !prevSep
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// problems collects the Problems of one ConfigError.
type problems struct {
	list []errs.Problem
}

// add reports key's value as bad. The same problem twice (a list with two
// empty items, " , ") is reported once.
func (p *problems) add(key, value, legal string) {
	q := errs.Problem{Key: key, Value: value, Legal: legal}
	if slices.Contains(p.list, q) {
		return
	}
	p.list = append(p.list, q)
}

// addUnset reports a required key that is not set.
func (p *problems) addUnset(key, legal string) {
	p.list = append(p.list, errs.Problem{Key: key, Legal: legal, Unset: true})
}

func (p *problems) has(key string) bool {
	for _, q := range p.list {
		if q.Key == key {
			return true
		}
	}
	return false
}

// err returns the collected problems as a *errs.ConfigError, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	errs.SortProblems(p.list)
	return &errs.ConfigError{Problems: p.list}
}
