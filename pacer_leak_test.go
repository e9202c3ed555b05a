package pgw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/admission"
)

// A call the quota refuses takes no pacer slot with it: the pacer slot
// taken before the combined breaker-and-quota admission is freed when the
// quota says no. Were it kept, every refusal would shrink the source's
// concurrency for good, and after as many refusals as the pacer's window
// (64) the source would admit nothing again.
func TestQuotaRefusalsLeaveThePacersSlotsFree(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES":          "a",
		"CHAT__A__MAX_IN_FLIGHT": "1",
		"CHAT__QUOTA_FULL":       "fail_fast",
	}, pgw.WithChatTransport(&ctxChat{}))
	ctx := context.Background()
	held, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err)
	for i := range admission.DefaultPacerCeiling + 1 {
		_, err := gw.ChatStream(ctx, hello())
		var ase *pgw.AllSourcesExhausted
		require.ErrorAs(t, err, &ase, "refusal %d: the one in-flight slot is held", i)
		assert.Contains(t, err.Error(), "a=rate_limited", "refusal %d: by the quota, not the pacer", i)
	}
	require.NoError(t, held.Close())
	st, err := gw.ChatStream(ctx, hello())
	require.NoError(t, err, "the slot is free again and so is the pacer's window")
	require.NoError(t, st.Close())
}
