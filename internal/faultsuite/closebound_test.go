package faultsuite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fs "github.com/pgw-go/pgw/internal/faultsuite"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A worker times its gateway's Close and reports one that took longer than
// Spec.CloseBound as a violation: held to a bound no Close can meet, every
// worker must report it.
func TestAWorkerReportsACloseOverItsBound(t *testing.T) {
	r := &rig{t: t, up1: testutil.NewUpstream(t), up2: testutil.NewUpstream(t), prefix: "pgw-fault-closebound"}
	spec := scenario{backend: "memory", workers: 2, goroutines: 2}.spec(r)
	spec.CloseBound = time.Nanosecond

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fleet, err := fs.Launch(ctx, 2, spec)
	require.NoError(t, err)
	t.Cleanup(fleet.Kill)
	reports, err := fleet.Close(ctx)
	require.NoError(t, err)
	m := fs.Merge(reports)
	assert.Equal(t, int64(2), m.Violations, strings.Join(m.Examples, "\n"))
	for _, e := range m.Examples {
		assert.Contains(t, e, "Close took")
	}
	assert.Positive(t, m.Close, "the longest Close is reported")
}
