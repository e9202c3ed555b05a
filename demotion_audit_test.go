package pgw_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
)

// Whichever face a call comes through, a source that failed it is tried
// only after the sources that have not: with the primary's breaker still
// closed, the retry goes to the backup of the next priority tier at once.
func TestEveryFaceTriesTheBackupAfterTheFailingPrimary(t *testing.T) {
	for name, f := range loopFaces(t) {
		if f.ep == "" {
			continue // pgw.Call: TestCallDemotesASourceThatFailedInThisCall
		}
		t.Run(name, func(t *testing.T) {
			primary, backup := testutil.NewUpstream(t), testutil.NewUpstream(t)
			primary.SetDefault(f.ep, testutil.Reply{Status: http.StatusServiceUnavailable})
			p := f.scope + "__"
			gw, rec := newGateway(t, map[string]string{
				"PGW_SCOPES":            f.scope,
				p + "SOURCES":           "primary,backup",
				p + "PRIMARY__BASE_URL": primary.URL,
				p + "BACKUP__BASE_URL":  backup.URL,
				p + "BACKUP__PRIORITY":  "1",
				p + "FAILURE_THRESHOLD": "100", // the breaker stays closed: only demotion moves the call
			})
			var calls atomic.Int32
			require.NoError(t, f.call(context.Background(), gw, &calls))
			assert.Equal(t, []string{"primary:failure", "backup:success"}, rec.Outcomes())
			assert.Equal(t, 1, primary.Requests(f.ep))
			assert.Equal(t, 1, backup.Requests(f.ep))
		})
	}
}
