package config

import (
	"slices"
	"strings"
)

// reportUnknown adds a problem for each key in names that sits in pgw's
// namespace but is no key of pgw: any unknown key under a listed scope's
// prefix (CHAT__CIRCUT_OPEN, CHAT__EU_1__BASEURL for a listed source), and
// PGW_ keys within two edits of a known one (other tools may own other PGW_
// names). Keys of sources not listed in {SCOPE}__SOURCES are left alone:
// dropping a source from the list is how one disables it. Values are never
// shown: an unknown key may be a mistyped API key.
func reportUnknown(names, listed []string, active []ScopeSettings, ps *problems) {
	globals := make([]string, 0, len(globalFields)+1)
	for _, f := range globalFields {
		globals = append(globals, f.suffix)
	}
	globals = append(globals, keyScopes)
	scopeKeys := []string{keySources}
	for _, f := range scopeFields {
		scopeKeys = append(scopeKeys, f.suffix)
	}
	sourceKeys := make([]string, 0, len(sourceFields))
	for _, f := range sourceFields {
		sourceKeys = append(sourceKeys, f.suffix)
	}

	for _, name := range names {
		if strings.HasPrefix(name, "PGW_") {
			if !slices.Contains(globals, name) {
				if near := nearest(name, globals, 2); near != "" {
					ps.add(name, Redacted, "not a pgw key; did you mean "+near+"?")
				}
			}
			continue
		}
		for _, scope := range listed {
			rest, ok := strings.CutPrefix(name, scope+"__")
			if !ok {
				continue
			}
			srcKey, fld, perSource := strings.Cut(rest, "__")
			switch {
			case !perSource && !slices.Contains(scopeKeys, rest):
				ps.add(name, Redacted, unknownLegal(scope+"__", rest, scopeKeys))
			case perSource && hasSourceKey(active, scope, srcKey) && !slices.Contains(sourceKeys, fld):
				ps.add(name, Redacted, unknownLegal(scope+"__"+srcKey+"__", fld, sourceKeys))
			}
			break
		}
	}
}

func unknownLegal(prefix, got string, known []string) string {
	if near := nearest(got, known, max(2, len(got)/4)); near != "" {
		return "not a pgw key; did you mean " + prefix + near + "?"
	}
	return "not a pgw key; known: " + prefix + "{" + strings.Join(known, ",") + "}"
}

func hasSourceKey(active []ScopeSettings, scope, srcKey string) bool {
	for _, sc := range active {
		if sc.Name != scope {
			continue
		}
		for _, src := range sc.Sources {
			if Key(src.Name) == srcKey {
				return true
			}
		}
	}
	return false
}

// nearest returns the candidate closest to s by edit distance if that
// distance is at most limit, else "".
func nearest(s string, candidates []string, limit int) string {
	const maxLen = 64 // keep the quadratic distance cheap on hostile input
	if len(s) > maxLen {
		return ""
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
