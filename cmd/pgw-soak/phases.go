package main

import (
	"net/http"
	"time"

	"github.com/pgw-go/pgw/internal/testutil"
)

// phase is one stretch of the soak: the upstreams' script from the start of
// the phase until the offset until.
type phase struct {
	name   string
	until  time.Duration
	script func(up1, up2 *testutil.Upstream)
}

// phases splits d: healthy 20 %, 5xx storm 15 %, 429 storm 15 %, recovery
// 20 %, flaky 30 %.
func phases(d time.Duration) []phase {
	at := func(share float64) time.Duration { return time.Duration(float64(d) * share) }
	return []phase{
		{"healthy", at(0.20), healthy},
		{"5xx", at(0.35), storm5xx},
		{"429", at(0.50), storm429},
		{"recovery", at(0.70), healthy},
		{"flaky", d, flaky},
	}
}

var endpoints = []testutil.Endpoint{testutil.Chat, testutil.Embeddings}

func each(up *testutil.Upstream, script func(n int) testutil.Reply) {
	for _, ep := range endpoints {
		up.SetScript(ep, script)
	}
}

func healthy(up1, up2 *testutil.Upstream) {
	each(up1, nil)
	each(up2, nil)
}

// storm5xx: upstream 1 answers 503 to everything, upstream 2 to one request
// in two: breakers open, calls fail over, probes fail and cooldowns grow.
func storm5xx(up1, up2 *testutil.Upstream) {
	each(up1, func(int) testutil.Reply { return testutil.Reply{Status: http.StatusServiceUnavailable} })
	each(up2, func(n int) testutil.Reply {
		if n%2 == 0 {
			return testutil.Reply{Status: http.StatusBadGateway}
		}
		return testutil.Reply{}
	})
}

// storm429: three requests in four are throttled with Retry-After: 1 s.
func storm429(up1, up2 *testutil.Upstream) {
	script := func(n int) testutil.Reply {
		if n%4 != 0 {
			return testutil.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		}
		return testutil.Reply{}
	}
	each(up1, script)
	each(up2, script)
}

// flaky: one request in ten fails (502), one chat answer in twenty is cut
// after its first chunk, first tokens come after 0–19 ms.
func flaky(up1, up2 *testutil.Upstream) {
	script := func(n int) testutil.Reply {
		switch {
		case n%10 == 0:
			return testutil.Reply{Status: http.StatusBadGateway}
		case n%20 == 5:
			return testutil.Reply{Cut: true, CutAfter: 1}
		}
		return testutil.Reply{FirstTokenDelay: time.Duration(n*7%20) * time.Millisecond}
	}
	each(up1, script)
	each(up2, script)
}
