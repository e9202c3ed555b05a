// Command single-source shows why a scope with one source should set
// {SCOPE}__CIRCUIT_OPEN=wait, and what that costs when the source's key is
// bad. Everything runs in this process against fake upstreams, with short
// cooldowns so it ends in a few seconds.
//
//	go run ./examples/single-source
//
// Five runs of one CHAT scope with one source (COOLDOWN_S 0.4,
// STALL_WINDOW_S 2):
//
//  1. fail_fast, the source blips (one 503): the breaker opens and the call
//     fails at once with *pgw.CircuitOpenError carrying the time left.
//  2. wait, the same blip: the call waits out the cooldown, probes, and
//     returns the answer.
//  3. fail_fast, a bad API key (401): Fatal opens the breaker at once; the
//     call fails at once, the 401 reachable with errors.As.
//  4. wait, the same bad key: the call waits a cooldown, probes (401 again,
//     the cooldown doubles), waits again… until MAX_ATTEMPTS (default 3 ×
//     sources) ends it with *pgw.GatewayUnavailableError. With the defaults
//     (COOLDOWN_S 60, MAX_ATTEMPTS 3) that is about three minutes (60 s +
//     120 s) for an error fail_fast reports in milliseconds: the price of
//     choosing wait.
//  5. The same with MAX_ATTEMPTS 20: the stall window ends it instead, with
//     *pgw.AllSourcesExhausted{Reason: "stalled"} (at most STALL_WINDOW_S
//     plus one poll interval; 300 s by default).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/examples/quickstart/timeline"
	"github.com/pgw-go/pgw/internal/testutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "single-source:", err)
		os.Exit(1)
	}
}

func run() error {
	tl := timeline.New(os.Stdout)
	blip := func(up *testutil.Upstream) {
		up.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable, Message: "restarting"})
	}
	badKey := func(up *testutil.Upstream) { up.RequireAPIKey("sk-the-right-key") }

	runs := []struct {
		title string
		mode  string
		fault func(*testutil.Upstream)
		extra map[string]string
	}{
		{"1. fail_fast, one 503: CircuitOpenError at once, with the time left", "fail_fast", blip, nil},
		{"2. wait, one 503: the call waits out the cooldown and answers", "wait", blip, nil},
		{"3. fail_fast, bad API key: the 401 opens the breaker, the call fails at once", "fail_fast", badKey, nil},
		{"4. wait, bad API key: cooldown after cooldown until MAX_ATTEMPTS (3)", "wait", badKey, nil},
		{"5. wait, bad API key, MAX_ATTEMPTS=20: until the stall window (2 s)", "wait", badKey,
			map[string]string{"CHAT__MAX_ATTEMPTS": "20"}},
	}
	for _, r := range runs {
		tl.Section(r.title)
		if err := once(tl, r.mode, r.fault, r.extra); err != nil {
			return err
		}
	}
	tl.Plain("\nA single-source scope should set {SCOPE}__CIRCUIT_OPEN=wait; a bad key then costs\n" +
		"MAX_ATTEMPTS probes spaced by growing cooldowns, or at most STALL_WINDOW_S, before the error.\n")
	return nil
}

// once runs one chat call on a fresh one-source gateway and prints the result.
func once(tl *timeline.Printer, mode string, fault func(*testutil.Upstream), extra map[string]string) error {
	up, stop := testutil.StartUpstream()
	defer stop()
	fault(up)
	env := map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "solo",
		"CHAT__CIRCUIT_OPEN":      mode,
		"CHAT__FAILURE_THRESHOLD": "1",
		"CHAT__COOLDOWN_S":        "0.4",
		"CHAT__STALL_WINDOW_S":    "2",
		"CHAT__SOLO__BASE_URL":    up.URL,
		"CHAT__SOLO__API_KEY":     "sk-a-wrong-key",
	}
	maps.Copy(env, extra)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if k != "CHAT__SOLO__BASE_URL" && k != "CHAT__SOLO__API_KEY" && k != "PGW_SCOPES" {
			tl.Plain("  %s=%s\n", k, env[k])
		}
	}
	settings, err := config.FromMap(env)
	if err != nil {
		return err
	}
	ctx := context.Background()
	gw, err := pgw.New(ctx, *settings, pgw.WithLogger(tl.Logger(slog.LevelDebug)))
	if err != nil {
		return err
	}
	defer gw.Close()

	began := tl.Since()
	resp, err := gw.Chat(ctx, pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "Summarise."}}})
	took := (tl.Since() - began).Round(time.Millisecond)
	var (
		coe *pgw.CircuitOpenError
		gue *pgw.GatewayUnavailableError
		ase *pgw.AllSourcesExhausted
		he  *pgw.HTTPError
	)
	status := ""
	if errors.As(err, &he) {
		status = fmt.Sprintf(" (last attempt: HTTP %d)", he.StatusCode)
	}
	switch {
	case err == nil:
		tl.Printf("→ answer after %v: %q", took, resp.Content)
	case errors.As(err, &coe):
		tl.Printf("→ after %v: %s, RetryAfter %v%s", took, coe.Code(), coe.RetryAfter.Round(time.Millisecond), status)
	case errors.As(err, &gue):
		tl.Printf("→ after %v: %s, %d attempts%s", took, gue.Code(), gue.Attempts, status)
	case errors.As(err, &ase):
		tl.Printf("→ after %v: %s (%s)%s", took, ase.Code(), ase.Reason, status)
	default:
		return err
	}
	return nil
}
