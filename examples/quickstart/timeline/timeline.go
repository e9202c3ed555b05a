// Package timeline prints what a pgw gateway logs as a readable timeline,
// one line per event, stamped with the time since the program started. The
// examples use it as their slog handler (pgw.WithLogger); it knows the
// gateway's messages (attempts, breaker state changes, waits) and prints
// anything else as "message key=value …".
package timeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Printer writes timeline lines. It is safe for concurrent use.
type Printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

// New returns a printer writing to w, with times relative to now.
func New(w io.Writer) *Printer { return &Printer{w: w, start: time.Now()} }

// Since returns the time elapsed since the printer was made.
func (p *Printer) Since() time.Duration { return time.Since(p.start) }

// Printf writes one line stamped with the elapsed time.
func (p *Printer) Printf(format string, args ...any) {
	p.line(fmt.Sprintf(format, args...))
}

// Section writes a blank line and a heading, unstamped.
func (p *Printer) Section(title string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\n── %s\n", title)
}

// Plain writes text as is, unstamped.
func (p *Printer) Plain(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

func (p *Printer) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%+7.3fs  %s\n", p.Since().Seconds(), s)
}

// Logger returns a slog.Logger that prints gateway events at level and
// above (slog.LevelDebug shows every attempt).
func (p *Printer) Logger(level slog.Level) *slog.Logger {
	return slog.New(&handler{p: p, level: level})
}

type handler struct {
	p     *Printer
	level slog.Level
	attrs []slog.Attr
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *handler) WithGroup(string) slog.Handler { return h }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	a := map[string]slog.Value{}
	var order []string
	add := func(at slog.Attr) bool {
		if _, seen := a[at.Key]; !seen {
			order = append(order, at.Key)
		}
		a[at.Key] = at.Value.Resolve()
		return true
	}
	for _, at := range h.attrs {
		add(at)
	}
	r.Attrs(add)
	get := func(k string) string {
		if v, ok := a[k]; ok {
			return v.String()
		}
		return ""
	}
	scope := fmt.Sprintf("%-10s", get("scope"))

	switch r.Message {
	case "pgw: attempt":
		s := fmt.Sprintf("%s attempt %s on %-8s %s", scope, get("attempt"), get("source"), strings.ToUpper(get("outcome")))
		if e := get("err"); e != "" {
			s += " — " + e
		}
		if fc, ok := a["first_chunk"]; ok {
			s += "  (first chunk after " + roundDur(fc) + ", done after " + roundDur(a["latency"]) + ")"
		} else {
			s += "  (" + roundDur(a["latency"]) + ")"
		}
		h.p.line(s)
	case "pgw: breaker state changed", "pgw: breaker state change observed (made by another process or an operator)":
		to := get("state")
		s := fmt.Sprintf("%s breaker of %s: %s → %s", scope, get("source"), get("from"), to)
		if to == "open" {
			s += ", cooldown ends in " + roundDur(a["retry_after"])
		}
		h.p.line(s)
	case "pgw: no source may run; waiting":
		h.p.line(fmt.Sprintf("%s no source may run (%s); waiting about %s",
			scope, reasons(a["reasons"]), roundDur(a["wait"])))
	case "pgw: wait over":
		s := fmt.Sprintf("%s wait over after %s: ", scope, roundDur(a["waited"]))
		if get("outcome") == "admitted" {
			s += "admitted " + get("source")
		} else {
			s += get("err")
		}
		h.p.line(s)
	default:
		var b strings.Builder
		b.WriteString(r.Level.String() + " " + r.Message)
		for _, k := range order {
			fmt.Fprintf(&b, " %s=%s", k, a[k])
		}
		h.p.line(b.String())
	}
	return nil
}

func roundDur(v slog.Value) string {
	if v.Kind() != slog.KindDuration {
		return v.String()
	}
	d := v.Duration()
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func reasons(v slog.Value) string {
	m, ok := v.Any().(map[string]string)
	if !ok {
		return v.String()
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}
