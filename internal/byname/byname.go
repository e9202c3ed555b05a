// Package byname finds values by a name, as a map does, but compares the
// names themselves while there are only a few of them: for the handful of
// sources a scope has, comparing a short string costs less than hashing it.
package byname

// few is how many names an Index finds by comparing them; more go through
// a map.
const few = 4

// Index is a read-only lookup by name. The zero Index finds nothing.
type Index[V any] struct {
	few []entry[V]   // every entry, when there are at most few
	m   map[string]V // otherwise
}

type entry[V any] struct {
	name string
	v    V
}

// Of returns an Index of m's entries. The Index keeps m when it has more
// than a few entries, so m must not change afterwards.
func Of[V any](m map[string]V) Index[V] {
	if len(m) > few {
		return Index[V]{m: m}
	}
	x := Index[V]{few: make([]entry[V], 0, len(m))}
	for name, v := range m {
		x.few = append(x.few, entry[V]{name: name, v: v})
	}
	return x
}

// Get returns the value of name, and whether there is one.
func (x *Index[V]) Get(name string) (V, bool) {
	if x.m != nil {
		v, ok := x.m[name]
		return v, ok
	}
	for i := range x.few {
		if x.few[i].name == name {
			return x.few[i].v, true
		}
	}
	var zero V
	return zero, false
}
