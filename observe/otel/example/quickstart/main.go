// Command quickstart shows pgw's OpenTelemetry observer, in a second, with
// no setup and no network: fake OpenAI-compatible upstreams run in this
// process, and every span is printed by the OpenTelemetry stdout exporter
// as it ends (one JSON line per span), then drawn as a tree.
//
//	cd observe/otel && go run ./example/quickstart   (or: make demo-otel)
//
// What it does, all under one caller's span "handler":
//
//  1. A chat call whose first source answers 503: the call fails over to
//     the backup. One pgw.call span, two attempt spans.
//  2. A streamed chat answer: its attempt span ends when the stream does,
//     and records the time to the first chunk.
//  3. A call to a single source whose breaker is open, on a scope set to
//     wait: the wait is an event of the call's span, then the probe.
//
// It lives in the observe/otel module, not beside the library's
// examples/quickstart, so that the library's module needs no OpenTelemetry
// package; -pretty prints the stdout exporter's JSON indented.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

func main() {
	pretty := flag.Bool("pretty", false, "indent the stdout exporter's JSON")
	flag.Parse()
	if err := run(os.Stdout, *pretty); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, pretty bool) error {
	ctx := context.Background()
	opts := []stdouttrace.Option{stdouttrace.WithWriter(w)}
	if pretty {
		opts = append(opts, stdouttrace.WithPrettyPrint())
	}
	stdout, err := stdouttrace.New(opts...)
	if err != nil {
		return err
	}
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(stdout), sdktrace.WithSyncer(mem))
	defer func() { _ = tp.Shutdown(ctx) }()
	obs := pgwotel.New(pgwotel.WithTracerProvider(tp))

	primary, stopPrimary := testutil.StartUpstream()
	defer stopPrimary()
	backup, stopBackup := testutil.StartUpstream()
	defer stopBackup()
	solo, stopSolo := testutil.StartUpstream()
	defer stopSolo()
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	solo.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})

	failover, err := gateway(ctx, obs, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__PRIMARY__MODEL":    "gpt-4o-mini",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__MODEL":     "gpt-4o-mini",
		"CHAT__BACKUP__PRIORITY":  "1",
	})
	if err != nil {
		return err
	}
	defer failover.Close()
	waiting, err := gateway(ctx, obs, map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "solo",
		"CHAT__SOLO__BASE_URL":    solo.URL,
		"CHAT__SOLO__MODEL":       "llama-3.1-8b",
		"CHAT__CIRCUIT_OPEN":      "wait",
		"CHAT__FAILURE_THRESHOLD": "1",
		"CHAT__COOLDOWN_S":        "0.3",
	})
	if err != nil {
		return err
	}
	defer waiting.Close()

	caller := tp.Tracer("quickstart")
	hctx, handler := caller.Start(ctx, "handler")
	msgs := []pgw.Message{{Role: "user", Content: "Say hello"}}
	fmt.Fprintln(w, "== spans, as the stdout exporter prints them when they end")
	if _, err := failover.Chat(hctx, pgw.ChatRequest{Messages: msgs}); err != nil {
		return err
	}
	st, err := failover.ChatStream(hctx, pgw.ChatRequest{Messages: msgs})
	if err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
	}
	if _, err := waiting.Chat(hctx, pgw.ChatRequest{Messages: msgs}); err != nil {
		return err
	}
	handler.End()

	fmt.Fprintln(w, "\n== the trace")
	printTree(w, mem.GetSpans())
	return nil
}

func gateway(ctx context.Context, obs pgw.Observer, env map[string]string) (*pgw.GatewayClient, error) {
	s, err := config.FromMap(env)
	if err != nil {
		return nil, err
	}
	// The gateway's own log lines would interleave with the spans: the
	// spans tell the same story here.
	return pgw.New(ctx, *s, pgw.WithObserver(obs), pgw.WithLogger(slog.New(slog.DiscardHandler)), pgw.WithBackoff(pgw.Backoff{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}))
}

// shown are the attributes the tree prints, in this order.
var shown = []attribute.Key{
	"pgw.source", "pgw.attempt", "pgw.breaker.state", "pgw.probe", "pgw.outcome", "error.type",
	"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.time_to_first_chunk",
	"pgw.result", "pgw.attempts", "pgw.waited",
	"pgw.wait.reason", "pgw.wait.duration",
}

// printTree draws the spans as a tree, children in start order, with their
// kind, length, chosen attributes and events.
func printTree(w io.Writer, spans tracetest.SpanStubs) {
	kids := map[string][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range spans {
		if p := s.Parent.SpanID().String(); s.Parent.IsValid() && ids[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var walk func(s tracetest.SpanStub, depth int, start time.Time)
	walk = func(s tracetest.SpanStub, depth int, start time.Time) {
		indent := strings.Repeat("  ", depth)
		fmt.Fprintf(w, "%s%-*s %-8s +%-8s %8s  %s\n", indent, 32-2*depth, s.Name, strings.ToUpper(s.SpanKind.String()),
			ms(s.StartTime.Sub(start)), ms(s.EndTime.Sub(s.StartTime)), pick(s.Attributes))
		for _, e := range s.Events {
			fmt.Fprintf(w, "%s  · event %-18s +%-8s %s\n", indent, e.Name, ms(e.Time.Sub(start)), pick(e.Attributes))
		}
		children := kids[s.SpanContext.SpanID().String()]
		sort.Slice(children, func(i, j int) bool { return children[i].StartTime.Before(children[j].StartTime) })
		for _, c := range children {
			walk(c, depth+1, start)
		}
	}
	for _, r := range roots {
		fmt.Fprintf(w, "trace %s\n", r.SpanContext.TraceID())
		walk(r, 1, r.StartTime)
	}
}

func pick(kvs []attribute.KeyValue) string {
	var parts []string
	for _, k := range shown {
		i := slices.IndexFunc(kvs, func(kv attribute.KeyValue) bool { return kv.Key == k })
		if i < 0 {
			continue
		}
		v := kvs[i].Value
		s := v.String()
		if v.Type() == attribute.FLOAT64 {
			s = ms(time.Duration(v.AsFloat64() * float64(time.Second)))
		}
		parts = append(parts, string(k)+"="+s)
	}
	return strings.Join(parts, " ")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
