package faultsuite_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fs "github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A verbose worker (the soak's -v) writes the gateway's warnings to its
// stderr; they must reach the parent's stderr while the load runs, not
// only the tail kept for an error message.
func TestVerboseWorkersWarningsReachTheParentsStderr(t *testing.T) {
	r := &rig{t: t, up1: testutil.NewUpstream(t), up2: testutil.NewUpstream(t), prefix: "pgw-fault-verbose"}
	r.each(&testutil.Reply{Status: http.StatusServiceUnavailable}) // breakers open: a Warn line each
	spec := scenario{backend: "memory", workers: 1, goroutines: 4, allowed: storm}.spec(r)
	spec.Verbose = true

	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = pw
	restore := func() { os.Stderr = saved }
	defer restore()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- string(b)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fleet, err := fs.Launch(ctx, 1, spec)
	require.NoError(t, err)
	t.Cleanup(fleet.Kill)
	require.Eventually(t, func() bool { return r.up1.Requests(testutil.Chat)+r.up2.Requests(testutil.Chat) >= 6 },
		10*time.Second, 5*time.Millisecond, "the load met the failing upstreams")
	_, err = fleet.Close(ctx)
	require.NoError(t, err)
	restore()
	require.NoError(t, pw.Close())
	out := <-got
	assert.Contains(t, out, "worker 0 ", "the worker's warnings on the parent's stderr")
	assert.Contains(t, out, "pgw: breaker state changed")
}
