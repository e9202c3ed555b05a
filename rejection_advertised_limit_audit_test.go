package pgw_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
)

// A source held back because its advertised budget is spent is an observed
// rate_limited rejection whose Limit names the advertised window that
// refused (advertised_requests), as observe.Rejection documents.
func TestAnAdvertisedBudgetRejectionNamesItsWindow(t *testing.T) {
	up := testutil.NewUpstream(t)
	adv := newAdvertiser(t, up, spentOpenAI("30s"))
	var mu sync.Mutex
	var rejections []observe.Rejection
	obs := observe.Funcs{Rejection: func(e observe.Rejection) {
		mu.Lock()
		rejections = append(rejections, e)
		mu.Unlock()
	}}
	gw, _ := newGateway(t, map[string]string{
		"CHAT__SOURCES":          "first,second",
		"CHAT__FIRST__BASE_URL":  adv.URL,
		"CHAT__FIRST__PRIORITY":  "0",
		"CHAT__SECOND__BASE_URL": up.URL,
		"CHAT__SECOND__PRIORITY": "1",
	}, pgw.WithObserver(obs))
	ctx := context.Background()
	for range 2 {
		_, err := gw.Chat(ctx, hello())
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, rejections, 1, "the second call skips the spent source once")
	r := rejections[0]
	assert.Equal(t, "first", r.Source)
	assert.Equal(t, "rate_limited", r.Reason)
	assert.Equal(t, "advertised_requests", r.Limit)
	assert.Positive(t, r.RetryAfter, "the time to the advertised reset")
}
