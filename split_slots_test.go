package pgw_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A split embedding call under QUOTA_FULL=fail_fast on sources whose
// MAX_IN_FLIGHT bound the scope (1 and 2 slots) runs no more parts at once
// than there are slots, and none of its parts is refused a slot that
// another of its parts holds: with nothing else calling, every call
// succeeds — in memory, and on Redis, where a part's slot comes back once
// the outcome writer has written it.
func TestSplitEmbedNeverRefusedItsOwnSlots(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			env := map[string]string{
				"PGW_SCOPES":                  "EMBEDDING",
				"EMBEDDING__SOURCES":          "a,b",
				"EMBEDDING__QUOTA_FULL":       "fail_fast",
				"EMBEDDING__A__BASE_URL":      up.URL,
				"EMBEDDING__A__MAX_IN_FLIGHT": "1",
				"EMBEDDING__A__BATCH_SIZE":    "1",
				"EMBEDDING__B__BASE_URL":      up.URL,
				"EMBEDDING__B__MAX_IN_FLIGHT": "2",
				"EMBEDDING__B__BATCH_SIZE":    "1",
			}
			if backend == "redis" {
				srv := testutil.StartRedis(t)
				env["PGW_BREAKER_BACKEND"] = "redis"
				env["PGW_REDIS_URL"] = "redis://" + srv.Addr + "/0"
				env["PGW_REDIS_PREFIX"] = "pgw-test-" + strings.ReplaceAll(t.Name(), "/", "-")
			}
			gw, _ := newGateway(t, env)
			in := make([]string, 9)
			for i := range in {
				in[i] = fmt.Sprintf("input %d", i)
			}
			for i := range 40 {
				resp, err := gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: in})
				require.NoError(t, err, "call %d", i)
				require.Len(t, resp.Vectors, len(in))
			}
		})
	}
}
