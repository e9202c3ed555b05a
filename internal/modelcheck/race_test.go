//go:build race

package modelcheck

// underRace: the race detector slows miniredis' Lua about fivefold, so the
// simulated model test runs fewer seeds under `make test` (go test -race);
// plain `go test ./internal/modelcheck/` runs them all.
const underRace = true
