package config

import (
	"slices"
	"strings"
)

// reportUnknown adds a problem for each key in names that sits in pgw's
// namespace, or next to it, but is no key pgw reads:
//
//   - any key under an active scope's prefix that is neither a scope key nor
//     a key of a listed source (CHAT__CIRCUT_OPEN, CHAT__BAKUP__API_KEY
//     when BAKUP is not in CHAT__SOURCES); when {SCOPE}__SOURCES is itself
//     invalid ("a;b"), the problem of such a key says so;
//   - any key under the prefix of a listed scope whose {SCOPE}__SOURCES is
//     not set: such a scope is inactive, so the key would be ignored;
//   - {SCOPE}__SOURCES (in any case: ocr__sources), and the keys under its
//     prefix, for a scope missing from PGW_SCOPES (unless PGW_SCOPES itself
//     is wrong, scopesBad);
//   - any key that is a pgw key but for its case, its underscores ('_' for
//     "__", "___"), or one edit (a changed, missing, extra or swapped
//     character, the source segment included);
//   - any key whose scope segment is a listed scope but for its case, or
//     one edit from one (CAHT__CIRCUIT_OPNE, EMBEDING__A__RPM);
//   - PGW_ keys within two edits of a known one (other tools may own other
//     PGW_ names).
//
// Each problem says what is wrong and, when a known key is near, "did you
// mean …?". Values are never shown: an unknown key may be a mistyped API key.
// The known keys are those of the field tables, so a key added to a table is
// known here at once.
func reportUnknown(names, listed []string, scopesBad bool, active []ScopeSettings, ps *problems) {
	k := newKnownKeys(listed, active)
	k.scopesBad = scopesBad
	for _, sc := range active {
		if ps.has(sc.Name + "__" + keySources) {
			k.sourcesBad[sc.Name] = true
		}
	}
	scopesFrom := "unset, so " + DefaultScopes
	if slices.Contains(names, keyScopes) {
		scopesFrom = strings.Join(listed, ",")
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, name := range sorted {
		if k.all[name] {
			continue
		}
		if legal, ok := k.judge(name, names, scopesFrom); ok {
			ps.add(name, Redacted, legal)
		}
	}
}

// knownKeys is every key pgw reads for one configuration: the PGW_ keys,
// {SCOPE}__SOURCES of each listed scope, and the other keys of the active
// scopes and their listed sources.
type knownKeys struct {
	all      map[string]bool
	list     []string // all, sorted, for stable suggestions
	loose    []string // loose(list[i])
	globals  []string
	listed   []string
	active   map[string][]string // active scope → its listed source keys
	scopeSfx []string            // SOURCES and the scope fields
	srcSfx   []string            // the source fields
	// scopesBad: PGW_SCOPES is reported already, so a scope missing from
	// it may be the one mistyped there.
	scopesBad bool
	// sourcesBad: the scopes whose {SCOPE}__SOURCES is reported already, so
	// a source missing from it may be one mistyped there.
	sourcesBad map[string]bool
}

func newKnownKeys(listed []string, active []ScopeSettings) *knownKeys {
	k := &knownKeys{all: map[string]bool{}, listed: listed, active: map[string][]string{}, sourcesBad: map[string]bool{}}
	for _, f := range globalFields {
		k.globals = append(k.globals, f.suffix)
	}
	k.globals = append(k.globals, keyScopes)
	k.scopeSfx = append(k.scopeSfx, keySources)
	for _, f := range scopeFields {
		k.scopeSfx = append(k.scopeSfx, f.suffix)
	}
	for _, f := range sourceFields {
		k.srcSfx = append(k.srcSfx, f.suffix)
	}
	add := func(key string) {
		if !k.all[key] {
			k.all[key] = true
			k.list = append(k.list, key)
		}
	}
	for _, g := range k.globals {
		add(g)
	}
	for _, scope := range listed {
		add(scope + "__" + keySources)
	}
	for _, sc := range active {
		for _, sfx := range k.scopeSfx {
			add(sc.Name + "__" + sfx)
		}
		for _, src := range sc.Sources {
			sk := Key(src.Name)
			k.active[sc.Name] = append(k.active[sc.Name], sk)
			for _, sfx := range k.srcSfx {
				add(sc.Name + "__" + sk + "__" + sfx)
			}
		}
		if _, ok := k.active[sc.Name]; !ok {
			k.active[sc.Name] = nil
		}
	}
	slices.Sort(k.list)
	for _, c := range k.list {
		k.loose = append(k.loose, loose(c))
	}
	return k
}

// judge decides whether name, which is not a known key, is a problem, and
// says why. names are all the keys set; scopesFrom shows PGW_SCOPES for the
// messages.
func (k *knownKeys) judge(name string, names []string, scopesFrom string) (string, bool) {
	near := k.near(name)
	scope, rest, scoped := strings.Cut(name, "__")
	switch {
	case scoped && slices.Contains(k.listed, scope):
		sources, isActive := k.active[scope]
		if !isActive {
			return withNear(scope+"__"+keySources+" is not set, so scope "+scope+
				" is inactive and this key is not read; set "+scope+"__"+keySources+" or unset this key", near), true
		}
		srcKey, fld, perSource := strings.Cut(rest, "__")
		switch {
		case !perSource:
			if near == "" {
				near = nearSuffix(scope+"__", rest, k.scopeSfx)
			}
			return withNear("not a key of scope "+scope+
				"; known: "+scope+"__{"+strings.Join(k.scopeSfx, ",")+"}", near), true
		case !slices.Contains(sources, srcKey) && k.sourcesBad[scope]:
			valid := ""
			if len(sources) > 0 {
				valid = " (its valid names: " + strings.Join(sources, ",") + ")"
			}
			return withNear("source "+srcKey+" is not listed in "+scope+"__"+keySources+
				", and "+scope+"__"+keySources+" is invalid"+valid+", so this key is not read; fix "+
				scope+"__"+keySources+" (see its problem) or unset this key", near), true
		case !slices.Contains(sources, srcKey):
			return withNear("source "+srcKey+" is not listed in "+scope+"__"+keySources+
				" ("+strings.Join(sources, ",")+"), so this key is not read; add it there or unset this key", near), true
		default:
			if near == "" {
				near = nearSuffix(scope+"__"+srcKey+"__", fld, k.srcSfx)
			}
			return withNear("not a key of source "+srcKey+
				"; known: "+scope+"__"+srcKey+"__{"+strings.Join(k.srcSfx, ",")+"}", near), true
		}
	case scoped && !k.scopesBad && validScopeName(scope) && (rest == keySources || slices.Contains(names, scope+"__"+keySources)):
		return withNear("scope "+scope+" is not in PGW_SCOPES ("+scopesFrom+"), so this key is not read; add "+scope+" to PGW_SCOPES or unset this key", near), true
	case scoped && !k.scopesBad && near == "" && validScopeName(strings.ToUpper(scope)) && strings.EqualFold(rest, keySources):
		// ocr__sources: OCR__SOURCES but for its case, of a scope PGW_SCOPES
		// does not list.
		up := strings.ToUpper(scope)
		return withNear("scope "+up+" is not in PGW_SCOPES ("+scopesFrom+"), and the key is not upper-case, so it is not read; add "+
			up+" to PGW_SCOPES and set "+up+"__"+keySources+", or unset this key", up+"__"+keySources), true
	case near != "":
		return withNear("not a pgw key", near), true
	case scoped && k.nearScope(scope) != "":
		sc := k.nearScope(scope)
		meant := k.near(sc + "__" + strings.ToUpper(rest))
		if meant == "" {
			meant = "scope " + sc
		}
		return withNear("no scope "+scope+" is configured (PGW_SCOPES: "+scopesFrom+"), so this key is not read", meant), true
	case strings.HasPrefix(strings.ToUpper(name), "PGW_"):
		if g := nearest(strings.ToUpper(name), k.globals, 2); g != "" {
			return withNear("not a pgw key", g), true
		}
	}
	return "", false
}

// nearScope returns the listed scope that seg, the first segment of a key
// that is not a listed scope's, most likely meant: the same name but for
// case, or one edit away (a swap of two neighbours counts as one). Segments
// shorter than three characters match nothing: too many other names are
// one edit from them.
func (k *knownKeys) nearScope(seg string) string {
	if len(seg) < 3 || len(seg) > 64 {
		return ""
	}
	up := strings.ToUpper(seg)
	for _, sc := range k.listed {
		if d := len(up) - len(sc); d >= -1 && d <= 1 && editDistance(up, sc) <= 1 {
			return sc
		}
	}
	return ""
}

func withNear(reason, near string) string {
	if near == "" {
		return reason
	}
	return reason + "; did you mean " + near + "?"
}

// near returns the known key that name most likely meant: the same key but
// for case, '-' for '_' or the number of underscores, or one edit away (a
// swap of two neighbours counts as one), compared case-insensitively. It
// returns "" when there is none.
func (k *knownKeys) near(name string) string {
	const maxLen = 128 // keep the quadratic distance cheap on hostile input
	if len(name) > maxLen {
		return ""
	}
	up := strings.ToUpper(name)
	if k.all[up] {
		return up
	}
	lo := loose(up)
	for i, c := range k.list {
		if k.loose[i] == lo {
			return c
		}
	}
	for _, c := range k.list {
		if d := len(up) - len(c); d >= -1 && d <= 1 && editDistance(up, c) <= 1 {
			return c
		}
	}
	return ""
}

// loose drops what people get wrong in a key's shape: underscores (and '-',
// which source names may hold but keys may not).
func loose(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, s)
}

// nearSuffix suggests prefix+known for a mistyped suffix further from a
// known one than near reaches (CHAT__CIRCUT_OPEN), or "".
func nearSuffix(prefix, got string, known []string) string {
	if s := nearest(strings.ToUpper(got), known, max(2, len(got)/4)); s != "" {
		return prefix + s
	}
	return ""
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

// editDistance is the optimal-string-alignment distance between a and b, by
// bytes: insertions, deletions, substitutions and swaps of two neighbours
// each count one.
func editDistance(a, b string) int {
	pprev := make([]int, len(b)+1)
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
		}
		pprev, prev, cur = prev, cur, pprev
	}
	return prev[len(b)]
}
