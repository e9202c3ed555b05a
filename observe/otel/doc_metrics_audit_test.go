package otel_test

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/metric/noop"

	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// auditDocInstrument is one instrument: its kind as the package comment
// names it (counter, up-down counter, gauge, histogram) and its unit.
type auditDocInstrument struct{ kind, unit string }

// auditDocMeter records every instrument the observer creates.
type auditDocMeter struct {
	noop.Meter
	made    map[string]auditDocInstrument
	buckets map[string][]float64 // each histogram's explicit boundaries
}

func (m *auditDocMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.made[name] = auditDocInstrument{"counter", metric.NewInt64CounterConfig(opts...).Unit()}
	return m.Meter.Int64Counter(name)
}

func (m *auditDocMeter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.made[name] = auditDocInstrument{"up-down counter", metric.NewInt64UpDownCounterConfig(opts...).Unit()}
	return m.Meter.Int64UpDownCounter(name)
}

func (m *auditDocMeter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	c := metric.NewInt64HistogramConfig(opts...)
	m.made[name] = auditDocInstrument{"histogram", c.Unit()}
	m.buckets[name] = c.ExplicitBucketBoundaries()
	return m.Meter.Int64Histogram(name)
}

func (m *auditDocMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	c := metric.NewFloat64HistogramConfig(opts...)
	m.made[name] = auditDocInstrument{"histogram", c.Unit()}
	m.buckets[name] = c.ExplicitBucketBoundaries()
	return m.Meter.Float64Histogram(name)
}

func (m *auditDocMeter) Int64Gauge(name string, opts ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.made[name] = auditDocInstrument{"gauge", metric.NewInt64GaugeConfig(opts...).Unit()}
	return m.Meter.Int64Gauge(name)
}

func (m *auditDocMeter) Float64Gauge(name string, opts ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.made[name] = auditDocInstrument{"gauge", metric.NewFloat64GaugeConfig(opts...).Unit()}
	return m.Meter.Float64Gauge(name)
}

type auditDocProvider struct {
	embedded.MeterProvider
	m *auditDocMeter
}

func (p auditDocProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.m }

// auditDocMetrics reads the package comment's metric table: each name with
// the kind and unit it gives ("histogram, s" → histogram, s; a kind
// without a unit has none).
func auditDocMetrics(t *testing.T) map[string]auditDocInstrument {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	doc := f.Doc.Text()
	start := strings.Index(doc, "# Metrics")
	require.GreaterOrEqual(t, start, 0)
	line := regexp.MustCompile(`^\t([a-z_.]+)(\{[a-z_,]*\})?\s+(up-down counter|counter|gauge|histogram)(, ([^\s:]+))?`)
	out := map[string]auditDocInstrument{}
	for _, l := range strings.Split(doc[start:], "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			out[m[1]] = auditDocInstrument{kind: m[3], unit: m[5]}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// The package comment's metric table names every instrument the observer
// creates, with its kind and unit, and no other: the GenAI histograms in
// seconds and {token} with the conventions' bucket advice, pgw's own
// counters without a unit, and pgw's seconds in s.
func TestPackageDocListsEveryMetricWithItsKindAndUnit(t *testing.T) {
	m := &auditDocMeter{made: map[string]auditDocInstrument{}, buckets: map[string][]float64{}}
	_ = pgwotel.New(pgwotel.WithMeterProvider(auditDocProvider{m: m}))
	assert.Equal(t, auditDocMetrics(t), m.made)
	// The GenAI conventions' own units.
	assert.Equal(t, "s", m.made["gen_ai.client.operation.duration"].unit)
	assert.Equal(t, "{token}", m.made["gen_ai.client.token.usage"].unit)
	assert.Equal(t, "s", m.made["gen_ai.client.operation.time_to_first_chunk"].unit)
	// The conventions' bucket advice, which time to first chunk shares
	// with the operation's duration.
	seconds := []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokens := []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	assert.Equal(t, seconds, m.buckets["gen_ai.client.operation.duration"])
	assert.Equal(t, seconds, m.buckets["gen_ai.client.operation.time_to_first_chunk"])
	assert.Equal(t, tokens, m.buckets["gen_ai.client.token.usage"])
}
