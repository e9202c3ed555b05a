// Package redis holds the Redis implementation of pgw's breaker gate: one
// breaker record per (scope, source) shared by every process that talks to
// the same Redis (single node, Redis Cluster or sentinel, through a
// goredis.UniversalClient). It follows the state machine and the RetryAfter
// contract of package gate exactly and passes contracttest.RunBreaker
// unchanged. The package also holds the Redis quota gate (Quota, see its
// documentation); what follows is about the breaker.
//
// # One script, one round trip, server time
//
// TryEnter, Record and Snapshot are each one Lua script (lua/*.lua, embedded)
// run with EVALSHA — one network round trip — and decided atomically inside
// Redis: nothing is held between TryEnter and Record, unlike a lock kept for
// the whole user call. RetryAfter(sources) sends one read-only script per
// distinct source in one pipeline: one round trip on a single node; on a
// cluster, where different sources live on different slots, go-redis splits
// the pipeline per node and sends the parts in parallel. A script the server
// does not know (after SCRIPT FLUSH, a restart, a new cluster node) costs one
// NOSCRIPT reply and an EVAL; Preload avoids that for the first calls.
//
// Every time the scripts use is the server's (redis.call('TIME'), µs); the
// client's clock is never read, so processes with skewed clocks agree.
//
// # Keys
//
// A source has two keys, both with the hash tag {scope:source} so that each
// script touches one cluster slot:
//
//	<prefix>:{<scope>:<source>}:cb      hash: state, generation, counts,
//	                                     cooldown, openUntil, window ring,
//	                                     operator override (fo)
//	<prefix>:{<scope>:<source>}:probes  sorted set: probe lease token → expiry
//
// The prefix defaults to "pgw" (WithPrefix); the scope is lower-cased. The
// fencing tokens — generations and lease tokens, drawn from one counter as in
// the memory gate — live in the record, so a process that restarts or a
// decision handed to another goroutine is fenced the same way. Each number
// the counter hands out is one more than the last or the server's clock in
// µs, whichever is greater, so a record built again after its keys were
// lost (expired, evicted, deleted, or a write a failover dropped) never
// hands out a number the lost one did; ARCHITECTURE.md ("Redis") states the
// bound on the servers' clocks this needs.
//
// # Key TTL
//
// The TTL of a source's keys is 2 × max(MaxCooldown, ProbeTTL, Window) in
// whole milliseconds (Breaker.KeyTTL; the longest time.Duration when that
// is longer), so a source nobody calls vanishes. Why that much: an Open phase ends at most
// MaxCooldown after the write that opened it, a lease at most ProbeTTL after
// its grant, a window outcome counts for Window; the factor 2 keeps an Open
// record (and its grown cooldown) for at least one more MaxCooldown after
// openUntil, so the first caller after the cooldown still gets a probe
// instead of a fresh Closed record.
//
// A script that keeps or writes the record refreshes that TTL when it
// changes the state or openUntil, when the record has no expiry yet, and
// otherwise only once less than half of it is left: the record holds the
// expiry last set (field x), so a busy source's scripts skip the PEXPIRE
// (and never ask PTTL). A record in use therefore always has at least
// max(MaxCooldown, ProbeTTL, Window) to live; a call admitted by TryEnter
// lasts less than ProbeTTL (which the gateway derives from twice the
// slowest timeout), so its Record always finds the record it was admitted
// by. The probe lease set gets the full TTL with each lease. A record that
// did expire reads as a fresh Closed one at generation 0, which is the
// right answer for a source idle that long, and its first transition numbers
// on above every generation and token the expired one handed out; a caller
// ordering answers by generation (see "Generations" in package gate) must
// read Snapshot when one goes back.
//
// The one exception is a record an operator forced (Breaker.Force, pgw
// open|close): it keeps no TTL until the override is cleared (ForceNone),
// since an override that vanished on its own would surprise whoever set it.
//
// # Redis outages
//
// Errors that mean Redis could not serve match ErrUnreachable. Failover wraps
// a Breaker with a local fallback gate for PGW_REDIS_DOWN=fail_open, or
// passes those errors through for fail_closed.
//
// Scripts are not idempotent: one run twice after its reply was lost would
// take a second lease or count a failure twice. So the gates send every
// script at most once: its command tells go-redis not to resend it after a
// reset or a read timeout, whatever the client's MaxRetries (go-redis's
// cluster client otherwise resends on such errors up to MaxRedirects times).
// Only replies that guarantee the script did not run — a slot migrating, a
// failover, a server loading — are retried, by the gate, for at most a second
// within the caller's deadline. A lost reply costs at most a lease, which
// expires on its own; when the reply was lost because its caller gave up
// (its ctx was cancelled or its deadline passed while the script ran), the
// in-flight lease and the probe lease that script may have taken are freed
// at once, off the caller's path, so that a caller's short deadline does
// not hold a source's slot, or its probe, for the lease's whole length.
package redis
