package config

import (
	"os"
	"slices"
	"strings"
)

// Requirement makes a per-source key required in some scopes, for a consumer
// of the settings that cannot work without it — the gateway requires
// BASE_URL of every source its default HTTP transport would call. The
// loaders and Validate treat the key as optional; FromEnvRequiring and
// ValidateRequiring report each source that leaves it empty in the same
// error (errors.As: *pgw.ConfigError) as every other problem, as an unset
// key. With Allow set, a Requirement narrows the key's legal values
// instead (the gateway refuses PROVIDER=anthropic in EMBEDDING, which has
// no embeddings API), reported likewise with the value.
type Requirement struct {
	// Scopes are the scopes whose sources need the key.
	Scopes []string
	// Key is the per-source key's suffix, e.g. "BASE_URL". Only keys whose
	// value may be empty (BASE_URL, API_KEY, MODEL) can be missing.
	Key string
	// Legal says what the key must hold and why it is needed.
	Legal string
	// Allow, when set, reports whether the key's effective value (as it
	// would be written in the environment, defaults filled in) is one the
	// consumer can use; a source whose value it refuses is a problem. A
	// value already reported as illegal is not asked about.
	Allow func(value string) bool
}

// FromEnvRequiring is FromEnv that also reports every source that misses a
// key reqs require.
func FromEnvRequiring(reqs ...Requirement) (*Settings, error) {
	g, err := readEnvGlobals()
	if err != nil {
		return nil, err
	}
	return load(g.lookup(), os.LookupEnv, envNames(), reqs)
}

// ValidateRequiring is Validate that also reports every source that misses a
// key reqs require.
func (s *Settings) ValidateRequiring(reqs ...Requirement) error {
	var ps problems
	if s == nil {
		ps.add("Settings", "nil", "a non-nil *config.Settings")
		return ps.err()
	}
	eff := s.WithDefaults()
	validate(eff, &ps)
	require(eff, reqs, &ps)
	return ps.err()
}

// require adds a problem for each source of s that leaves a key of reqs
// empty, or whose value a requirement's Allow refuses, unless that key is
// already reported.
func require(s Settings, reqs []Requirement, ps *problems) {
	for _, r := range reqs {
		i := slices.IndexFunc(sourceFields, func(f field[Source]) bool { return f.suffix == r.Key })
		if i < 0 {
			continue
		}
		f := sourceFields[i]
		for _, sc := range s.Scopes {
			if !slices.Contains(r.Scopes, sc.Name) {
				continue
			}
			for j := range sc.Sources {
				key := sc.Name + "__" + Key(sc.Sources[j].Name) + "__" + r.Key
				shown, legal := f.check(&sc.Sources[j])
				switch {
				case ps.has(key):
				case r.Allow != nil:
					if legal && !r.Allow(shown) {
						ps.add(key, shown, r.Legal)
					}
				case strings.TrimSpace(shown) == "":
					ps.addUnset(key, r.Legal)
				}
			}
		}
	}
}
