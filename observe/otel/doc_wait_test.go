package otel_test

import (
	"context"
	"go/parser"
	"go/token"
	"maps"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// documentedWaitAttrs returns the attribute keys the package comment's span
// tree gives the "pgw.wait" event: the lines from "event pgw.wait" to the
// first attempt span.
func documentedWaitAttrs(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	require.NotNil(t, f.Doc)
	doc := f.Doc.Text()
	start := strings.Index(doc, "event "+pgwotel.EventWait)
	require.GreaterOrEqual(t, start, 0, "the span tree shows the wait event")
	block := doc[start+len("event "+pgwotel.EventWait):]
	end := strings.Index(block, "├─")
	require.GreaterOrEqual(t, end, 0)
	block = block[:end]
	keys := regexp.MustCompile(`[a-z_]+(?:\.[a-z_]+)+`).FindAllString(block, -1)
	sort.Strings(keys)
	return keys
}

// The span tree of the package comment names every attribute a "pgw.wait"
// event carries — that of a wait that ended in an admission and that of one
// its caller gave up — and no other.
func TestWaitEventAttributesAreTheDocumentedOnes(t *testing.T) {
	// A stream holds the only slot: the calls below wait for it.
	r, st := slotHeld(t, nil)
	rejections := func() int64 {
		sum, _ := r.metrics(t)["pgw_gate_rejections_total"].(metricdata.Sum[int64])
		var n int64
		for _, dp := range sum.DataPoints {
			n += dp.Value
		}
		return n
	}
	// One call waits until its caller gives up.
	cctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := r.gw.Chat(cctx, pgw.ChatRequest{Messages: hello})
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return rejections() > 0 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	// Another waits until the stream gives the slot back.
	admitted := make(chan error, 1)
	seen := rejections()
	go func() {
		_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
		admitted <- err
	}()
	require.Eventually(t, func() bool { return rejections() > seen }, 5*time.Second, time.Millisecond)
	require.NoError(t, st.Close())
	require.NoError(t, <-admitted)

	emitted := map[string]bool{}
	events := 0
	for _, c := range r.ended()[pgwotel.SpanCall] {
		for _, e := range c.Events {
			if e.Name != pgwotel.EventWait {
				continue
			}
			events++
			for _, kv := range e.Attributes {
				emitted[string(kv.Key)] = true
			}
		}
	}
	require.Equal(t, 2, events, "two calls waited once each")
	var got []string
	for k := range emitted {
		got = append(got, k)
	}
	sort.Strings(got)
	assert.Equal(t, got, documentedWaitAttrs(t), "what the events carry, against the span tree of doc.go")
}

// A wait that ends in one of pgw's errors, not the caller's ctx, names the
// error's code as its error.type — not a Go type of an internal package.
func TestWaitEventGivenUpNamesTheErrorsCode(t *testing.T) {
	// A stream holds the only slot past the stall window: the call below
	// waits for it until it is stalled.
	r, st := slotHeld(t, map[string]string{"CHAT__QUOTA_FULL": "wait", "CHAT__STALL_WINDOW_S": "0.05"})
	_, err := r.gw.Chat(context.Background(), pgw.ChatRequest{Messages: hello})
	var ase *pgw.AllSourcesExhausted
	require.ErrorAs(t, err, &ase)
	require.Equal(t, pgw.ReasonStalled, ase.Reason)
	require.NoError(t, st.Close())

	var types []string
	for _, c := range r.ended()[pgwotel.SpanCall] {
		for _, e := range c.Events {
			if e.Name != pgwotel.EventWait {
				continue
			}
			for _, kv := range e.Attributes {
				if kv.Key == "error.type" {
					types = append(types, kv.Value.AsString())
				}
			}
		}
	}
	assert.Equal(t, []string{pgw.CodeExhausted}, types)
}

// slotHeld starts a rig whose CHAT scope has one source with one in-flight
// slot, with extra settings on top, and a stream that holds the slot (its
// first chunk read): a chat call on it waits.
func slotHeld(t *testing.T, extra map[string]string) (*rig, *pgw.Stream) {
	t.Helper()
	up := testutil.NewUpstream(t)
	env := map[string]string{
		"PGW_SCOPES":                "CHAT",
		"CHAT__SOURCES":             "solo",
		"CHAT__SOLO__BASE_URL":      up.URL,
		"CHAT__SOLO__MODEL":         "model-s",
		"CHAT__SOLO__MAX_IN_FLIGHT": "1",
	}
	maps.Copy(env, extra)
	r := newRig(t, env)
	st, err := r.gw.ChatStream(context.Background(), pgw.ChatRequest{Messages: hello})
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	return r, st
}
