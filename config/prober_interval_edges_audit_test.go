package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/config"
)

// TestProberIntervalAloneAtItsEdges: setting PGW_REDIS_PROBE_INTERVAL_S
// alone never yields a problem of a key the user did not set. Across the
// interval's room the derived defaults stay within the seconds range (the
// heartbeat at most 10000000); outside it (a half too short for any
// timeout, or no heartbeat able to outlast it) the one problem is the
// interval's own, with its value and its legal room.
func TestProberIntervalAloneAtItsEdges(t *testing.T) {
	s := mustLoad(t, base("PGW_REDIS_PROBE_INTERVAL_S", "0.002"))
	assert.Equal(t, time.Millisecond, s.Redis.ProbeTimeout, "half the interval")

	s = mustLoad(t, base("PGW_REDIS_PROBE_INTERVAL_S", "5000000"))
	assert.Equal(t, 10_000_000*time.Second, s.Redis.HeartbeatTTL, "six intervals, held to the seconds range")
	assert.Equal(t, 5_000_000*time.Second, s.Redis.ProbeBackoff)

	for _, raw := range []string{"0.001", "0.0015", "10000000"} {
		t.Run(raw, func(t *testing.T) {
			ce := mustFail(t, base("PGW_REDIS_PROBE_INTERVAL_S", raw))
			assert.Equal(t, []string{"PGW_REDIS_PROBE_INTERVAL_S"}, keys(ce), "%v", ce)
			p := problem(t, ce, "PGW_REDIS_PROBE_INTERVAL_S")
			assert.Equal(t, raw, p.Value)
			assert.Contains(t, p.Legal, "[0.002, 10000000)")
		})
	}

	// In code: the same room, named by the same key.
	for _, iv := range []time.Duration{time.Millisecond, 10_000_000 * time.Second} {
		in := config.Settings{
			Redis:  config.RedisSettings{ProbeInterval: iv},
			Scopes: []config.ScopeSettings{{Name: "CHAT", Sources: []config.Source{{Name: "a"}}}},
		}
		ce := validateErr(t, in)
		assert.Equal(t, []string{"PGW_REDIS_PROBE_INTERVAL_S"}, keys(ce), "%v", ce)
	}
}
