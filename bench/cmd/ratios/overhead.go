package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// overhead is what one leaf of a group with a "raw" leaf (the same call made
// with no library around it, bench/overhead_test.go) costs over raw.
type overhead struct {
	Group, Leaf string
	// NsOp is the leaf's median ns/op; OverRaw that minus raw's.
	NsOp, OverRaw float64
	// Measured is the median overhead-ns/call the leaf timed around the call
	// itself (serial leaves only); HasMeasured is false without it.
	Measured    float64
	HasMeasured bool
}

// overheads lists, for every group with a raw leaf, each other leaf's cost
// over raw, in run order.
func overheads(results []result) []overhead {
	raw := map[string]float64{}
	for _, r := range results {
		if g, leaf, ok := cut(r.Name); ok && leaf == "raw" {
			if v, ok := r.median("ns/op"); ok {
				raw[g] = v
			}
		}
	}
	var out []overhead
	for _, r := range results {
		g, leaf, ok := cut(r.Name)
		base, has := raw[g]
		if !ok || !has || leaf == "raw" {
			continue
		}
		v, ok := r.median("ns/op")
		if !ok {
			continue
		}
		o := overhead{Group: g, Leaf: leaf, NsOp: v, OverRaw: v - base}
		o.Measured, o.HasMeasured = r.median("overhead-ns/call")
		out = append(out, o)
	}
	return out
}

func cut(name string) (group, leaf string, ok bool) {
	i := strings.LastIndex(name, "/")
	if i < 0 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

func reportOverheads(w io.Writer, os []overhead) {
	if len(os) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Cost over the raw call (groups with a raw leaf): ns/op minus raw's ns/op, and overhead-ns/call,")
	fmt.Fprintln(w, "the time each serial leaf measured around the call itself (free of the upstream's noise):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tleaf\tns/op\tover raw\toverhead-ns/call\t")
	for _, o := range os {
		measured := "-"
		if o.HasMeasured {
			measured = fmt.Sprintf("%.0f", o.Measured)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%+.0f\t%s\t\n", o.Group, o.Leaf, o.NsOp, o.OverRaw, measured)
	}
	tw.Flush()
}
