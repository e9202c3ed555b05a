package pgw_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// panickyObserver panics on the first attempt end it hears of, as a buggy
// observer would; the caller recovers from the panic and goes on.
type panickyObserver struct {
	pgw.Observer
	armed      atomic.Bool
	armedStart atomic.Bool
}

func (o *panickyObserver) ObserveAttemptStart(pgw.AttemptStart) {
	if o.armedStart.CompareAndSwap(true, false) {
		panic("observer bug")
	}
}

func (o *panickyObserver) ObserveAttempt(a pgw.AttemptRecord) {
	if o.armed.CompareAndSwap(true, false) {
		panic("observer bug")
	}
	o.Observer.ObserveAttempt(a)
}

// An observer that panics as an attempt starts or ends does not keep the attempt's
// admission: the in-flight slot (MAX_IN_FLIGHT=1) and the pacer's slot are
// given back before the panic reaches the caller, so the next call runs.
func TestObserverPanicAtAttemptEndKeepsNoAdmission(t *testing.T) {
	for _, c := range []struct {
		name          string
		stream, start bool
	}{{"chat_end", false, false}, {"stream_end", true, false}, {"chat_start", false, true}, {"stream_start", true, true}} {
		stream := c.stream
		t.Run(c.name, func(t *testing.T) {
			obs := &panickyObserver{Observer: newRecorder()}
			gw, _ := newGateway(t, map[string]string{
				"CHAT__SOURCES":          "a",
				"CHAT__A__MAX_IN_FLIGHT": "1",
				"CHAT__QUOTA_FULL":       "fail_fast",
			}, pgw.WithChatTransport(&ctxChat{eof: true}), pgw.WithObserver(obs))
			ctx := context.Background()
			run := func() error {
				if !stream {
					_, err := gw.Chat(ctx, hello())
					return err
				}
				st, err := gw.ChatStream(ctx, hello())
				if err != nil {
					return err
				}
				for {
					if _, err := st.Recv(); err != nil {
						break
					}
				}
				return st.Close()
			}
			if c.start {
				obs.armedStart.Store(true)
			} else {
				obs.armed.Store(true)
			}
			assert.PanicsWithValue(t, "observer bug", func() { _ = run() })
			require.NoError(t, run(), "the slot the panicking call held is free again")
			adm, err := gw.Admission("CHAT")
			require.NoError(t, err)
			assert.Zero(t, adm.Latency().InFlight("a"), "no attempt is left counted in flight")
		})
	}
}
