package breaker

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestRegistryGetOrCreateReturnsOneBreakerPerNameUnderConcurrency(t *testing.T) {
	var r Registry // the zero value is ready
	const callers = 32
	got := make([]*Breaker, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			b, err := r.GetOrCreate(fmt.Sprintf("svc-%d", i%2), Config{Logger: discardLogger()})
			assert.NoError(t, err)
			got[i] = b
		})
	}
	close(start)
	wg.Wait()

	for i := range callers {
		require.NotNil(t, got[i])
		assert.Same(t, got[i%2], got[i], "caller %d got another breaker", i)
	}
	assert.NotSame(t, got[0], got[1])
	assert.Equal(t, []string{"svc-0", "svc-1"}, r.Names())
}

func TestRegistryFirstConfigWins(t *testing.T) {
	r := NewRegistry()
	first, err := r.GetOrCreate("api", Config{Policy: gate.Policy{ConsecutiveFailures: 1}, Logger: discardLogger()})
	require.NoError(t, err)
	again, err := r.GetOrCreate("api", Config{Policy: gate.Policy{ConsecutiveFailures: 9}})
	require.NoError(t, err)
	require.Same(t, first, again)
	require.ErrorIs(t, again.Execute(t.Context(), fail), errBoom)
	assert.Equal(t, gate.Open, first.State(), "the first config (trip after 1) is the one in force")
}

func TestRegistryInvalidConfigRegistersNothing(t *testing.T) {
	r := NewRegistry()
	_, err := r.GetOrCreate("api", Config{Policy: gate.Policy{Cooldown: -1}})
	_, ok := errors.AsType[*ConfigError](err)
	require.True(t, ok, "got %v", err)
	_, found := r.Get("api")
	assert.False(t, found)
	assert.Empty(t, r.Names())

	b, err := r.GetOrCreate("api", Config{Logger: discardLogger()})
	require.NoError(t, err)
	got, found := r.Get("api")
	assert.True(t, found)
	assert.Same(t, b, got)
}

func TestDefaultRegistryExists(t *testing.T) {
	require.NotNil(t, DefaultRegistry)
}
