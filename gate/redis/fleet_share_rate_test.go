package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// TestFleetShareOfALargeLimitIsALegalRate: a legal TPM of 10⁹ divided by a
// fleet of 3 is 333 333 333, a rate the gates cannot count exactly; the
// fallback must still serve (a share rounded down to a rate they can count),
// not fail every Acquire of the outage with a *gate.LimitsError.
func TestFleetShareOfALargeLimitIsALegalRate(t *testing.T) {
	const tpm = 1_000_000_000
	require.True(t, gate.RateLegal(tpm))
	require.False(t, gate.RateLegal(tpm/3), "the plain share is not a legal rate")
	srv := testutil.StartRedis(t)
	prefix := "share" + uniqueScope()
	pr := newTestProber(t, proxiedClient(t, srv.Addr), prefix, &logSink{})
	for range 2 {
		newTestProber(t, proxiedClient(t, srv.Addr), prefix, &logSink{})
	}
	require.True(t, waitFor(5*time.Second, func() bool { return pr.Processes() == 3 }), "got %d", pr.Processes())
	fq, err := redis.NewFleetQuota(map[string]gate.Limits{"s": {TPM: tpm, RPM: 600}, "t": {RPM: 60}}, pr)
	require.NoError(t, err)

	sh := fq.Share("s")
	assert.True(t, gate.RateLegal(sh.TPM), "share TPM %d must be a legal rate", sh.TPM)
	assert.LessOrEqual(t, sh.TPM, tpm/3, "the fleet stays within the limit")
	assert.Greater(t, sh.TPM, tpm/3-1000, "and loses no more than rounding")
	assert.Equal(t, 200, sh.RPM)

	for _, src := range []string{"s", "t"} {
		p, d, err := fq.Acquire(t.Context(), src, 1000)
		require.NoError(t, err, "the fallback serves %q", src)
		require.True(t, d.Allowed)
		require.NoError(t, fq.Finish(t.Context(), p, 10))
	}
}
