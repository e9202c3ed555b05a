// Package bench measures pgw side by side with peer libraries in one run:
// sony/gobreaker v2 and failsafe-go for the in-process breaker, and
// gobreaker v2's distributed breaker for the Redis-shared one. It is its own
// module so the peers never enter pgw's dependency graph.
//
// Run everything and print the pgw/peer ratios with `make bench` from the
// repository root (it runs ./cmd/ratios). The benchmarks that need Redis start
// their own redis-server on a free loopback port and skip, with a message,
// when the binary is absent.
package bench
