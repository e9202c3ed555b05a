package breaker

import (
	"slices"
	"sync"
)

// Registry hands out one Breaker per name. The zero value
// is an empty registry ready to use. It is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	breakers map[string]*Breaker
}

// DefaultRegistry is a process-wide registry for code that wants one. Nothing
// in pgw uses it implicitly; tests and libraries should prefer their own
// Registry.
var DefaultRegistry = NewRegistry()

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// GetOrCreate returns the breaker named name, creating it with cfg on first
// use. Later calls with the same name return that same breaker and ignore
// their cfg: the first configuration wins. Concurrent first calls create one
// breaker. An invalid cfg for a new name returns a *ConfigError and registers
// nothing.
func (r *Registry) GetOrCreate(name string, cfg Config) (*Breaker, error) {
	if b, ok := r.Get(name); ok {
		return b, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.breakers[name]; ok {
		return b, nil
	}
	// New does no I/O, so creating under the lock is cheap and keeps one
	// breaker per name.
	b, err := New(name, cfg)
	if err != nil {
		return nil, err
	}
	if r.breakers == nil {
		r.breakers = make(map[string]*Breaker)
	}
	r.breakers[name] = b
	return b, nil
}

// Get returns the breaker named name, if one was created.
func (r *Registry) Get(name string) (*Breaker, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.breakers[name]
	return b, ok
}

// Names returns the names of the registered breakers, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	names := make([]string, 0, len(r.breakers))
	for n := range r.breakers {
		names = append(names, n)
	}
	r.mu.RUnlock()
	slices.Sort(names)
	return names
}
