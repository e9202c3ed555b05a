package pgw_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A backoff that would end at or after the caller's deadline is not slept:
// no attempt could follow it, so the call ends at once with
// *GatewayUnavailableError wrapping the last attempt's error (the 503 stays
// reachable), not with a bare context.DeadlineExceeded at the deadline.
// The backoff here draws up to ten minutes; a shorter draw is slept and the
// next attempt fails the same way, so the call never reaches its deadline.
func TestABackoffPastTheDeadlineEndsAtOnceWithTheLastError(t *testing.T) {
	for _, face := range []string{"Chat", "Call"} {
		t.Run(face, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			up.SetDefault(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
			env := soloChat(up.URL, "PGW_SCOPES", "CHAT,RERANK", "CHAT__FAILURE_THRESHOLD", "50", "CHAT__MAX_ATTEMPTS", "50",
				"RERANK__SOURCES", "r", "RERANK__R__BASE_URL", up.URL, "RERANK__FAILURE_THRESHOLD", "50", "RERANK__MAX_ATTEMPTS", "50")
			gw, _ := newGateway(t, env, pgw.WithBackoff(pgw.Backoff{Base: 10 * time.Minute, Max: 10 * time.Minute}))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			var err error
			runs := 0
			if face == "Chat" {
				_, err = gw.Chat(ctx, hello())
			} else {
				_, err = pgw.Call(ctx, gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
					runs++
					return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: http.StatusServiceUnavailable}
				})
			}
			require.NoError(t, ctx.Err(), "the call did not sleep into its deadline")
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			var gue *pgw.GatewayUnavailableError
			require.ErrorAs(t, err, &gue)
			assert.GreaterOrEqual(t, gue.Attempts, 1)
			var he *pgw.HTTPError
			require.ErrorAs(t, err, &he, "the last attempt's error is reachable")
			assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
			if face == "Chat" {
				assert.Equal(t, gue.Attempts, up.Requests(testutil.Chat))
			} else {
				assert.Equal(t, gue.Attempts, runs)
			}
		})
	}
}
