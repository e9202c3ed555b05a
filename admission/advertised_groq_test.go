package admission_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/provider"
)

// Groq's requests limit counts per day: it is not compared with the
// per-minute RPM (no "other rate limits than configured" line for it),
// while its per-minute tokens limit still is.
func TestGroqsDailyRequestsLimitIsNotComparedWithRPM(t *testing.T) {
	groq := func(configured map[string]gate.Limits) fixtureOpt {
		return func(c *admission.Config) {
			c.Advertising = admission.Advertising{Budget: memory.NewBudget(memory.WithClock(c.Clock)), Configured: configured,
				Dialects: map[string]provider.Dialect{"s1": provider.DialectGroq}}
		}
	}
	mismatches := func(f *fixture) []slog.Record {
		var out []slog.Record
		for _, r := range f.logs.records(slog.LevelInfo) {
			if r.Message == "pgw: the upstream advertises other rate limits than configured" {
				out = append(out, r)
			}
		}
		return out
	}

	f := newFixture(t, groq(map[string]gate.Limits{"s1": {RPM: 30}}))
	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", openAIHeaders("14400", "14370", "2m59.56s")))
	assert.Empty(t, mismatches(f), "14,400 a day is not an RPM of 14,400")

	f = newFixture(t, groq(map[string]gate.Limits{"s1": {RPM: 30, TPM: 6000}}))
	h := openAIHeaders("14400", "14370", "2m59.56s")
	h.Set("x-ratelimit-limit-tokens", "18000")
	h.Set("x-ratelimit-remaining-tokens", "17997")
	h.Set("x-ratelimit-reset-tokens", "7.66s")
	f.adm.Advertise(context.Background(), "s1", f.adm.ReadAnswer("s1", h))
	if lines := mismatches(f); assert.Len(t, lines, 1, "the per-minute tokens limit differs") {
		a := attrs(lines[0])
		assert.Equal(t, int64(6000), a["configured_tpm"].Int64())
		assert.Equal(t, int64(18000), a["advertised_tokens"].Int64())
	}
}
