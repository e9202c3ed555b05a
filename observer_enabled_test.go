package pgw_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// With no observer of the caller's and a logger above Debug, a governed call
// builds no reports: it allocates less than the same call whose logger takes
// the Debug attempt lines — and turning Debug on later is seen by the next
// call, which logs its attempt.
func TestACallBuildsNoReportsWhenNothingWouldReadThem(t *testing.T) {
	s, err := config.FromMap(map[string]string{"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "a"})
	require.NoError(t, err)
	var level slog.LevelVar
	level.Set(slog.LevelInfo)
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: &level}))
	gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(log))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gw.Close()) })

	ctx := context.Background()
	call := func() {
		_, err := pgw.Call(ctx, gw, "RERANK", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
			return 1, pgw.Usage{}, nil
		})
		require.NoError(t, err)
	}
	call() // first sight of the source
	quiet := testing.AllocsPerRun(200, call)
	assert.Empty(t, out.String(), "nothing logged at Info for a successful call")

	level.Set(slog.LevelDebug)
	debug := testing.AllocsPerRun(200, call)
	t.Logf("allocs per call: %v without reports, %v with", quiet, debug)
	assert.Less(t, quiet, debug, "the reports are built only when the Debug attempt log reads them")
	assert.True(t, strings.Contains(out.String(), "pgw: attempt"), "Debug turned on at run time is seen by the next call")
}
