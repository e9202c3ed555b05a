package pgw_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/observe"
)

// coreOff implements only the core Observer and says it is off.
type coreOff struct{ got atomic.Int64 }

func (o *coreOff) Enabled() bool                      { return false }
func (o *coreOff) ObserveAttempt(pgw.AttemptRecord)   { o.got.Add(1) }
func (o *coreOff) ObserveStateChange(pgw.StateChange) { o.got.Add(1) }

// fullOff is the same with every optional method (those of observe.Nop).
type fullOff struct {
	observe.Nop
	got atomic.Int64
}

func (o *fullOff) Enabled() bool                      { return false }
func (o *fullOff) ObserveAttempt(pgw.AttemptRecord)   { o.got.Add(1) }
func (o *fullOff) ObserveStateChange(pgw.StateChange) { o.got.Add(1) }

// An observer that says it is off is asked once per call and gets no reports
// of that call, whether or not it implements the optional interfaces: an
// observer with only the core methods is wrapped, and the wrapper must still
// ask it.
func TestAnObserverThatSaysItIsOffGetsNoReportsWhateverItImplements(t *testing.T) {
	core, full := &coreOff{}, &fullOff{}
	for name, tc := range map[string]struct {
		obs pgw.Observer
		got *atomic.Int64
	}{"core only": {core, &core.got}, "full": {full, &full.got}} {
		t.Run(name, func(t *testing.T) {
			s, err := config.FromMap(map[string]string{"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "a"})
			require.NoError(t, err)
			gw, err := pgw.New(context.Background(), *s, pgw.WithObserver(tc.obs),
				pgw.WithLogger(slog.New(slog.DiscardHandler)))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, gw.Close()) })
			_, err = pgw.Call(context.Background(), gw, "RERANK", func(context.Context, pgw.Source) (int, pgw.Usage, error) {
				return 1, pgw.Usage{}, nil
			})
			require.NoError(t, err)
			assert.Zero(t, tc.got.Load(), "reports handed to an observer that is off")
		})
	}
}
