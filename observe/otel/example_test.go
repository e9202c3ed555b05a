package otel_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// A gateway reporting to an OpenTelemetry TracerProvider: a call whose first
// source answers 503 is one pgw.call span with one span per attempt. In a
// service, pass nothing to New to use the global providers.
func ExampleNew() {
	primary, stopPrimary := testutil.StartUpstream()
	defer stopPrimary()
	backup, stopBackup := testutil.StartUpstream()
	defer stopBackup()
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	settings, err := config.FromMap(map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__PRIMARY__BASE_URL": primary.URL,
		"CHAT__PRIMARY__MODEL":    "gpt-4o-mini",
		"CHAT__BACKUP__BASE_URL":  backup.URL,
		"CHAT__BACKUP__MODEL":     "gpt-4o-mini",
		"CHAT__BACKUP__PRIORITY":  "1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	gw, err := pgw.New(ctx, *settings, pgw.WithObserver(pgwotel.New(pgwotel.WithTracerProvider(tp))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	if _, err := gw.Chat(ctx, pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Say hello"}}}); err != nil {
		fmt.Println(err)
		return
	}
	ended := spans.GetSpans()
	sort.SliceStable(ended, func(i, j int) bool { // by start; the call before its first attempt
		a, b := ended[i], ended[j]
		if !a.StartTime.Equal(b.StartTime) {
			return a.StartTime.Before(b.StartTime)
		}
		return a.Name == pgwotel.SpanCall && b.Name != pgwotel.SpanCall
	})
	for _, s := range ended {
		var source, outcome string
		for _, kv := range s.Attributes {
			switch kv.Key {
			case pgwotel.AttrSource:
				source = kv.Value.AsString()
			case pgwotel.AttrOutcome, pgwotel.AttrResult:
				outcome = kv.Value.AsString()
			}
		}
		fmt.Printf("%s: %s on %s\n", s.Name, outcome, source)
	}
	// Output:
	// pgw.call: success on backup
	// chat gpt-4o-mini: failure on primary
	// chat gpt-4o-mini: success on backup
}
