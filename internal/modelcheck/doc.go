// Package modelcheck holds pgw's model-based tests: random sequences of gate
// operations and time advances, applied in lockstep to the memory gate and the
// Redis gate, must produce identical decisions, updates and snapshots. The
// memory gate and the Redis gate are two independent implementations of the
// contract of package gate (gate/doc.go); any difference between them is a bug
// in one of them.
//
// The tests run two ways:
//
//   - on miniredis, whose clock the test drives (TIME follows SetTime, keys
//     expire on FastForward), for many long sequences compared exactly;
//   - on a real redis-server with real time, for a few short sequences whose
//     RetryAfter values are compared within a tolerance, every operation kept
//     away from the instants where the state may change (openUntil, lease
//     expiry, window bucket edges, key expiry).
//
// The breaker sequences mix TryEnter, Record (Success, Failure, Fatal,
// Released and invalid outcomes; current, stale, foreign and forged
// decisions), Snapshot, RetryAfter(sources) and advances over three sources;
// the quota sequences mix Acquire (including bad token counts), Settle
// (refunds, debits, forged permits), Release (live, released, expired,
// rejected and zero permits) and advances. Beyond comparing the gates —
// generations and overrides of every answer included — each answer is
// checked against the pinned RetryAfter contract, each breaker answer's
// generation, state and override against a Snapshot read right after it
// (when snapshots are compared at every step), and every quota retry against
// the instant its rejection named.
//
// Behaviour the contract leaves to the backend is modelled, not compared
// blindly: a Redis breaker record idle for its key TTL reads as a fresh one
// (the harness moves the source to a fresh memory record), and a Redis
// in-flight lease expires (the harness releases the memory slot then).
//
// A failing sequence is shrunk (delta debugging: steps are dropped while the
// divergence persists) and printed as Go lines to paste into a regression
// test (checkBreaker, checkQuota in the tests). One seed replays with
//
//	go test ./internal/modelcheck -run TestBreakerModelMiniredis -pgw.seed=42
//
// or with PGW_SEED=42 in the environment; with one seed that passes, -v
// prints its sequence. -pgw.base, -pgw.seeds, -pgw.steps and -pgw.each
// explore further.
//
// The non-test files hold the sequence vocabulary (Step and its constructors,
// Normalize, Format) and the generic shrinker, so that the quota model reuses
// them.
package modelcheck
