package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// result is one benchmark's figures over all its -count runs, keyed by unit
// ("ns/op", "B/op", "allocs/op", "calls/s", …).
type result struct {
	Name    string
	Samples map[string][]float64
}

// median returns the median of unit's samples and whether there were any.
func (r result) median(unit string) (float64, bool) {
	s := slices.Clone(r.Samples[unit])
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// procSuffix is the "-N" GOMAXPROCS suffix go test appends to benchmark names.
var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output and returns the benchmarks in the order
// they first appear. Lines that are not benchmark results are ignored.
func parse(r io.Reader) ([]result, error) {
	var order []string
	byName := map[string]*result{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// Benchmark<Name>-N  <iterations>  <value> <unit>  [<value> <unit>]...
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		res, ok := byName[name]
		if !ok {
			res = &result{Name: name, Samples: map[string][]float64{}}
			byName[name] = res
			order = append(order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			res.Samples[fields[i+1]] = append(res.Samples[fields[i+1]], v)
		}
	}
	out := make([]result, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, sc.Err()
}

// ratio compares pgw with one peer in the same group.
type ratio struct {
	Group, Peer string
	Unit        string
	PGW, Other  float64
}

// Value is pgw ÷ peer.
func (r ratio) Value() float64 { return r.PGW / r.Other }

// ratios pairs every benchmark named <group>/pgw with each sibling
// <group>/<peer>. Throughput groups (those reporting calls/s) compare calls/s;
// the others compare ns/op.
func ratios(results []result) []ratio {
	groups := map[string]map[string]result{}
	var order []string
	for _, r := range results {
		i := strings.LastIndex(r.Name, "/")
		if i < 0 {
			continue
		}
		g, leaf := r.Name[:i], r.Name[i+1:]
		if groups[g] == nil {
			groups[g] = map[string]result{}
			order = append(order, g)
		}
		groups[g][leaf] = r
	}
	var out []ratio
	for _, g := range order {
		members := groups[g]
		pgw, ok := members["pgw"]
		if !ok {
			continue
		}
		unit := "ns/op"
		if _, ok := pgw.median("calls/s"); ok {
			unit = "calls/s"
		}
		pv, ok := pgw.median(unit)
		if !ok {
			continue
		}
		for _, r := range results { // results order keeps peers in run order
			if !strings.HasPrefix(r.Name, g+"/") || r.Name == g+"/pgw" {
				continue
			}
			leaf := r.Name[len(g)+1:]
			if strings.Contains(leaf, "/") {
				continue
			}
			ov, ok := r.median(unit)
			if !ok || ov == 0 {
				continue
			}
			out = append(out, ratio{Group: g, Peer: leaf, Unit: unit, PGW: pv, Other: ov})
		}
	}
	return out
}
