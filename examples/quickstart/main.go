// Command quickstart shows pgw governing calls, in a few seconds, with no
// setup and no network: it starts fake OpenAI-compatible upstreams in this
// process, configures a gateway with the same keys you would export as
// environment variables, and prints a timeline of what happens.
//
//	go run ./examples/quickstart   (or: make demo)
//
// What you will see:
//
//  1. CHAT with two sources: "primary" (flaky, its first two answers are
//     HTTP 503) and "backup" (priority 1, used when primary cannot run).
//     The first two calls fail over to backup; the second failure in a row
//     opens primary's breaker; the third call goes straight to backup.
//  2. After primary's 1.5 s cooldown, a streamed chat call probes it
//     (open → half_open), the probe succeeds (→ closed), and the chunks
//     are printed as they arrive.
//  3. EMBEDDING: ten inputs split into sub-batches of BATCH_SIZE 4, vectors
//     back in input order. OCR: one image read as a vision chat request.
//  4. A single-source scope whose source answers 503 once. With
//     CIRCUIT_OPEN=fail_fast (the default) the call fails at once with
//     *pgw.CircuitOpenError, whose RetryAfter is the true time left of the
//     cooldown; asked again half a second later it says half a second less.
//  5. The same with CIRCUIT_OPEN=wait: the call waits out the cooldown,
//     probes, and succeeds — one call, one answer, no error to handle.
//
// With -metrics the gateway also reports to a Prometheus collector
// (observe/prom) served on an in-process /metrics endpoint, and the demo
// ends by printing what that endpoint serves.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/examples/quickstart/timeline"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe/prom"
	"github.com/pgw-go/pgw/openai"
)

func main() {
	metrics := flag.Bool("metrics", false, "serve /metrics (observe/prom) and print it at the end")
	flag.Parse()
	if err := run(os.Stdout, *metrics); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, metrics bool) error {
	tl := timeline.New(w)
	ctx := context.Background()

	// The upstreams. Each is an httptest server speaking the OpenAI API.
	flaky, stopFlaky := testutil.StartUpstream()
	defer stopFlaky()
	healthy, stopHealthy := testutil.StartUpstream()
	defer stopHealthy()
	soloFast, stopSoloFast := testutil.StartUpstream()
	defer stopSoloFast()
	soloWait, stopSoloWait := testutil.StartUpstream()
	defer stopSoloWait()

	// primary's first two answers are 503; later answers stream slowly
	// enough to watch.
	flaky.SetScript(testutil.Chat, func(n int) testutil.Reply {
		if n <= 2 {
			return testutil.Reply{Status: http.StatusServiceUnavailable, Message: "upstream overloaded"}
		}
		return testutil.Reply{Text: "Primary is back: its probe closed the breaker.", BeforeChunk: pause(80 * time.Millisecond)}
	})
	healthy.SetDefault(testutil.Chat, testutil.Reply{Text: "Backup here."})
	for _, up := range []*testutil.Upstream{soloFast, soloWait} {
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable, Message: "upstream restarting"})
	}

	env := map[string]string{
		"PGW_SCOPES": "CHAT,EMBEDDING,OCR,SOLO_FAST,SOLO_WAIT",

		"CHAT__SOURCES":           "primary,backup",
		"CHAT__FAILURE_THRESHOLD": "2",
		"CHAT__COOLDOWN_S":        "1.5",
		"CHAT__PRIMARY__BASE_URL": flaky.URL,
		"CHAT__PRIMARY__API_KEY":  "sk-demo-primary",
		"CHAT__PRIMARY__MODEL":    "demo-large",
		"CHAT__BACKUP__BASE_URL":  healthy.URL,
		"CHAT__BACKUP__API_KEY":   "sk-demo-backup",
		"CHAT__BACKUP__MODEL":     "demo-small",
		"CHAT__BACKUP__PRIORITY":  "1",

		"EMBEDDING__SOURCES":              "embedder",
		"EMBEDDING__EMBEDDER__BASE_URL":   healthy.URL,
		"EMBEDDING__EMBEDDER__BATCH_SIZE": "4",

		"OCR__SOURCES":          "reader",
		"OCR__READER__BASE_URL": healthy.URL,

		"SOLO_FAST__SOURCES":           "solo",
		"SOLO_FAST__CIRCUIT_OPEN":      "fail_fast",
		"SOLO_FAST__FAILURE_THRESHOLD": "1",
		"SOLO_FAST__COOLDOWN_S":        "3",
		"SOLO_FAST__SOLO__BASE_URL":    soloFast.URL,

		"SOLO_WAIT__SOURCES":           "solo",
		"SOLO_WAIT__CIRCUIT_OPEN":      "wait",
		"SOLO_WAIT__FAILURE_THRESHOLD": "1",
		"SOLO_WAIT__COOLDOWN_S":        "1",
		"SOLO_WAIT__SOLO__BASE_URL":    soloWait.URL,
	}
	tl.Plain("pgw quickstart — governed calls against fake upstreams in this process (no network)\n\n")
	tl.Plain("Configuration, as environment variables (config.FromMap reads them like FromEnv):\n")
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range env {
			if !yield(k) {
				return
			}
		}
	}) {
		v := env[k]
		if strings.HasSuffix(k, "__API_KEY") {
			v = config.Redacted
		}
		tl.Plain("  %s=%s\n", k, v)
	}

	settings, err := config.FromMap(env)
	if err != nil {
		return err // a *pgw.ConfigError naming every bad key
	}
	opts := []pgw.Option{pgw.WithLogger(tl.Logger(slog.LevelDebug))}
	var metricsURL string
	if metrics {
		// What a service does to expose pgw to Prometheus: register the
		// collector, serve the registry, hand the collector to the gateway.
		col := prom.New()
		reg := prometheus.NewRegistry()
		reg.MustRegister(col)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		defer srv.Close()
		metricsURL = srv.URL + "/metrics"
		opts = append(opts, pgw.WithObserver(col))
	}
	gw, err := pgw.New(ctx, *settings, opts...)
	if err != nil {
		return err
	}
	defer gw.Close()

	tl.Section("1. CHAT fails over from the flaky primary to the backup")
	for i := 1; i <= 3; i++ {
		resp, err := gw.Chat(ctx, ask(fmt.Sprintf("Question %d?", i)))
		if err != nil {
			return err
		}
		tl.Printf("→ call %d answered by %s: %q", i, resp.Source, resp.Content)
	}

	tl.Section("2. After primary's cooldown a streamed call probes it and the breaker closes")
	tl.Printf("(sleeping 1.5 s: primary's cooldown)")
	time.Sleep(1500 * time.Millisecond)
	st, err := gw.ChatStream(ctx, ask("Are you back?"))
	if err != nil {
		return err
	}
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = st.Close()
			return err
		}
		if ch.Delta != "" {
			tl.Printf("  chunk from %s: %q", st.Source(), ch.Delta)
		}
	}
	_ = st.Close()
	tl.Printf("→ stream done, %d tokens", st.Usage().TotalTokens)

	tl.Section("3. EMBEDDING splits by BATCH_SIZE; OCR reads an image")
	inputs := make([]string, 10)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("document %d", i)
	}
	emb, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: inputs})
	if err != nil {
		return err
	}
	tl.Printf("→ %d vectors of %d dimensions, in input order, from %d requests",
		len(emb.Vectors), len(emb.Vectors[0]), healthy.Requests(testutil.Embeddings))
	page, err := gw.OCR(ctx, pgw.OCRRequest{Image: samplePNG()})
	if err != nil {
		return err
	}
	tl.Printf("→ OCR text: %q", page.Text)

	oc := openai.New() // the Call functions below speak to the upstream themselves
	defer oc.CloseIdleConnections()
	chatOn := func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		return complete(ctx, oc, src, ask("Summarise the incident."))
	}

	tl.Section("4. One source, CIRCUIT_OPEN=fail_fast (the default): the error says how long")
	for i := 0; i < 2; i++ {
		if i == 1 {
			tl.Printf("(asking again 0.5 s later)")
			time.Sleep(500 * time.Millisecond)
		}
		_, err := pgw.Call(ctx, gw, "SOLO_FAST", chatOn)
		var coe *pgw.CircuitOpenError
		if !errors.As(err, &coe) {
			return fmt.Errorf("expected a CircuitOpenError, got %v", err)
		}
		tl.Printf("→ %s error: RetryAfter = %v", coe.Code(), coe.RetryAfter.Round(time.Millisecond))
	}

	tl.Section("5. One source, CIRCUIT_OPEN=wait: the call waits out the cooldown and succeeds")
	began := tl.Since()
	answer, err := pgw.Call(ctx, gw, "SOLO_WAIT", chatOn)
	if err != nil {
		return err
	}
	tl.Printf("→ answered after %.2f s: %q", (tl.Since() - began).Seconds(), answer)

	tl.Plain("\nDone in %.1f s. A single-source scope should set {SCOPE}__CIRCUIT_OPEN=wait (see docs/USAGE.md).\n",
		tl.Since().Seconds())
	if metricsURL != "" {
		return printMetrics(w, metricsURL)
	}
	return nil
}

// printMetrics prints the pgw_ samples the /metrics endpoint serves (the
// HELP and TYPE lines and histogram buckets left out for brevity).
func printMetrics(w io.Writer, url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGET %s (pgw_ samples, buckets left out):\n", url)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "pgw_") && !strings.Contains(line, "_bucket{") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	return nil
}

func ask(q string) pgw.ChatRequest {
	return pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: q}}}
}

// complete runs one streamed chat completion on src through the openai
// transport and collects it: the body of a Call function.
func complete(ctx context.Context, oc *openai.Client, src pgw.Source, req pgw.ChatRequest) (string, pgw.Usage, error) {
	st, err := oc.ChatStream(ctx, src, req)
	if err != nil {
		return "", pgw.Usage{}, err
	}
	defer st.Close()
	var b strings.Builder
	var usage pgw.Usage
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), usage, nil
		}
		if err != nil {
			return "", pgw.Usage{}, err
		}
		b.WriteString(ch.Delta)
		if ch.Usage != nil {
			usage = *ch.Usage
		}
	}
}

// pause holds each chunk after the first back for d, so streaming shows.
func pause(d time.Duration) func(ctx context.Context, i int) {
	return func(ctx context.Context, i int) {
		if i == 0 {
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// samplePNG is a small grey image.
func samplePNG() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 8, 8)))
	return b.Bytes()
}
