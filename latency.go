package pgw

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/pgw-go/pgw/admission"
)

// LatencyStats is one source's latency as this process sees it: the
// peak-EWMA of its time to first chunk (to the answer, for calls that do not
// stream), its attempts in flight, and recent quantiles.
type LatencyStats = admission.LatencyStats

// Latency returns this process's latency view of every source of a scope,
// in the order admission tries them: what BALANCE=latency compares and what
// the adaptive hedge delay (HEDGE_AFTER=pNN) reads. The view is per process
// by design — each process measures its own path to the upstreams — so it
// is read here, in the process, not from Redis.
func (g *GatewayClient) Latency(scopeName string) ([]LatencyStats, error) {
	sc, err := g.scope(scopeName)
	if err != nil {
		return nil, err
	}
	return sc.loop.Admission().Latency().Stats(), nil
}

// WriteLatencyStatus writes this process's latency view of every scope as a
// table in the style of `pgw status` (SCOPE, SOURCE, EWMA, IN_FLIGHT, P50,
// P90, OBSERVED), for a debug endpoint or a log: `pgw status` runs in a
// process of its own and reads what gateways share through Redis, which the
// per-process latency is not.
func (g *GatewayClient) WriteLatencyStatus(w io.Writer) error {
	if g == nil {
		return errNilClient
	}
	if g.kill == nil {
		return errNotBuilt
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tSOURCE\tEWMA\tIN_FLIGHT\tP50\tP90\tOBSERVED")
	for _, name := range g.names {
		for _, s := range g.scopes[name].loop.Admission().Latency().Stats() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\n", name, s.Source,
				latencyText(s.EWMA, s.Observed > 0), s.InFlight,
				latencyText(s.P50, s.P50 > 0), latencyText(s.P90, s.P90 > 0), s.Observed)
		}
	}
	return tw.Flush()
}

func latencyText(d time.Duration, known bool) string {
	if !known {
		return "-"
	}
	return d.Round(100 * time.Microsecond).String()
}
