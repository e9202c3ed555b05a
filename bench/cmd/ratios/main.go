// Command ratios runs pgw's side-by-side benchmarks and prints, for every
// benchmark, the median ns/op, B/op and allocs/op over the runs, then the
// pgw/peer ratios of each group (a group is a benchmark with a "pgw" leaf and
// one leaf per peer).
//
// Run it from bench/ (make bench does):
//
//	go run ./cmd/ratios                  # 5 interleaved runs of go test -bench . -benchmem ./...
//	go run ./cmd/ratios -in old-run.txt  # only parse a saved run
//
// For ns/op a ratio below 1 means pgw is faster; for calls/s a ratio above 1
// means pgw moved more calls per second.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	in := flag.String("in", "", "parse this saved go test -bench output instead of running the benchmarks")
	count := flag.Int("count", 5, "number of go test runs (each with -count 1, interleaving the samples)")
	bench := flag.String("bench", ".", "go test -bench pattern")
	benchtime := flag.String("benchtime", "", "go test -benchtime (empty: go test's default)")
	flag.Parse()

	raw, err := load(*in, *count, *bench, *benchtime)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
	results, err := parse(bytes.NewReader(raw))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratios: reading benchmark output:", err)
		os.Exit(1)
	}
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "ratios: the run produced no benchmark results")
		os.Exit(1)
	}
	report(os.Stdout, results, notes(raw), cpuOf(raw))
}

// load returns saved output, or runs the benchmarks, echoing their output to
// stderr as it comes so a long run shows progress.
//
// The samples are interleaved: count runs of go test -count 1, each covering
// every benchmark, rather than one go test -count N that runs each benchmark
// N times in a row. On a shared machine the load drifts during a run;
// interleaving spreads the drift over pgw and its peers alike instead of
// letting it fall on whichever ran during a busy minute.
func load(in string, count int, bench, benchtime string) ([]byte, error) {
	if in != "" {
		return os.ReadFile(in)
	}
	// -v so that benchmark logs (the NOTE lines) and skip messages are shown.
	args := []string{"test", "-v", "-run", "^$", "-bench", bench, "-benchmem", "-count", "1"}
	if benchtime != "" {
		args = append(args, "-benchtime", benchtime)
	}
	args = append(args, "./...")
	var buf bytes.Buffer
	for i := 1; i <= count; i++ {
		fmt.Fprintf(os.Stderr, "run %d of %d: go %s\n", i, count, strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go test -bench (run %d of %d) failed: %w", i, count, err)
		}
	}
	return buf.Bytes(), nil
}

// notes returns the lines benchmarks log with b.Log under the "NOTE:" prefix
// (a skipped Redis comparison, how the gobreaker store was built), once each.
func notes(raw []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		i := strings.Index(line, "NOTE:")
		if i < 0 {
			continue
		}
		n := strings.TrimSpace(line[i+len("NOTE:"):])
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func report(w io.Writer, results []result, notes []string, cpu string) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s, %s, %d CPUs (cpu: %s)\n", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		runtime.Version(), runtime.NumCPU(), cpu)
	fmt.Fprintln(w, "Medians over the runs:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tns/op\tB/op\tallocs/op\tcalls/s\tredis cmds/call\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Name,
			cell(r, "ns/op", "%.1f"), cell(r, "B/op", "%.0f"), cell(r, "allocs/op", "%.0f"),
			cell(r, "calls/s", "%.0f"), cell(r, "redis-cmds/call", "%.2f"))
	}
	tw.Flush()
	for _, r := range results {
		if extra := others(r); extra != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, extra)
		}
	}

	rs := ratios(results)
	if len(rs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "pgw/peer ratios (ns/op: below 1 = pgw faster; calls/s: above 1 = pgw more throughput):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "group\tpeer\tunit\tpgw\tpeer\tpgw/peer\t")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%.3f\t\n", r.Group, r.Peer, r.Unit, r.PGW, r.Other, r.Value())
		}
		tw.Flush()
	}
	reportOverheads(w, overheads(results))
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, "note:", n)
		}
	}
}

// cpuOf returns the "cpu:" line go test prints, or "unknown".
func cpuOf(raw []byte) string {
	for _, line := range strings.Split(string(raw), "\n") {
		if c, ok := strings.CutPrefix(line, "cpu: "); ok {
			return strings.TrimSpace(c)
		}
	}
	return "unknown"
}

// shown lists the units the main table has columns for.
var shown = map[string]bool{"ns/op": true, "B/op": true, "allocs/op": true, "calls/s": true, "redis-cmds/call": true,
	"overhead-ns/call": true} // reportOverheads shows it

// others renders the medians of a benchmark's remaining units
// ("errors/call", "counted/call", …), sorted by unit.
func others(r result) string {
	var units []string
	for u := range r.Samples {
		if !shown[u] {
			units = append(units, u)
		}
	}
	slices.Sort(units)
	parts := make([]string, 0, len(units))
	for _, u := range units {
		parts = append(parts, cell(r, u, "%.4g")+" "+u)
	}
	return strings.Join(parts, ", ")
}

func cell(r result, unit, format string) string {
	v, ok := r.median(unit)
	if !ok {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
