package prom_test

import (
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/observe/prom"
)

// exposed returns every metric a Collector serves, by name, with its label
// names in order (sorted, as Prometheus sorts them): each event is
// delivered once so that every vector has a series.
func exposed(t *testing.T) map[string]string {
	t.Helper()
	c := prom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	now := time.Now()
	c.ObserveAttemptStart(observe.AttemptStart{Scope: "S", Source: "a", At: now})
	c.ObserveAttempt(observe.AttemptRecord{Scope: "S", Source: "a", Outcome: observe.OutcomeSuccess, Latency: time.Millisecond})
	c.ObserveStateChange(observe.StateChange{Scope: "S", Source: "a", At: now})
	c.ObserveRejection(observe.Rejection{Scope: "S", Source: "a", Reason: "cooldown", At: now})
	c.ObserveWaitEnd(observe.WaitEnd{Scope: "S", Reason: "circuit_open", Waited: time.Millisecond, At: now})
	c.ObserveCall(observe.CallResult{Scope: "S", Result: observe.ResultSuccess})
	c.ObserveHedge(observe.Hedge{Scope: "S", Source: "b", Primary: "a", Event: observe.HedgeFired, At: now})
	win := observe.AdvertisedWindow{Limit: 10, Remaining: 5, Reset: time.Second}
	c.ObserveAdvertised(observe.Advertised{Scope: "S", Source: "a", Requests: win, Tokens: win})
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]string{}
	for _, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		sort.Strings(labels)
		out[mf.GetName()] = strings.Join(labels, ",")
	}
	return out
}

// The package comment's metric table lists every metric the Collector
// serves, with its labels, and nothing it does not serve.
func TestPackageDocListsEveryMetricWithItsLabels(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "prom.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	require.NotNil(t, f.Doc)
	row := regexp.MustCompile(`(?m)^[ \t]+(pgw_[a-z_]+)(?:\{([a-z,]*)\})?[ \t]`)
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(f.Doc.Text(), -1) {
		labels := strings.Split(m[2], ",")
		if m[2] == "" {
			labels = nil
		}
		sort.Strings(labels)
		documented[m[1]] = strings.Join(labels, ",")
	}
	assert.Equal(t, exposed(t), documented)
}

// README's Prometheus paragraph names every metric the Collector serves,
// and only those.
func TestREADMENamesEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(b)
	start := strings.Index(readme, "- **Prometheus**")
	require.GreaterOrEqual(t, start, 0, "README has a Prometheus paragraph")
	para := readme[start:]
	if end := strings.Index(para, "\n```"); end >= 0 {
		para = para[:end]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(pgw_[a-z_]+)`").FindAllStringSubmatch(para, -1) {
		named[m[1]] = true
	}
	for name := range exposed(t) {
		assert.True(t, named[name], "README's Prometheus paragraph does not name %s", name)
		delete(named, name)
	}
	assert.Empty(t, named, "README names metrics the Collector does not serve")
}
