// Package gate defines the ports every pgw backend implements and the small
// value types they exchange: the breaker gate (ProviderGate), the quota gate
// (QuotaGate) and the operator port (Forcer). Backends live in sub-packages:
// gate/memory for one process and gate/redis for state shared by many
// processes.
//
// # The breaker state machine
//
// One record exists per source. It is Closed, Open or HalfOpen, and carries a
// generation number that grows on every transition. Every backend follows these
// rules exactly; contracttest.RunBreaker pins them.
//
//   - Closed: TryEnter allows and returns Token = the current generation.
//     Failure outcomes count consecutive failures (and, when Policy.Window is
//     set, failures within a rolling window); a Success resets the consecutive
//     count. When the policy trips the record becomes Open with
//     openUntil = now + Cooldown.
//   - Open: TryEnter before openUntil is rejected with RetryAfter =
//     openUntil − now. The first TryEnter at or after openUntil moves the
//     record to HalfOpen (a new generation) and is granted a probe lease.
//   - HalfOpen: at most Policy.HalfOpenProbes leases exist at once. Each lease
//     has its own fencing token and expires at grant + ProbeTTL; an expired
//     lease is forgotten and its slot may be granted again with a new token.
//     A TryEnter that finds every slot taken is rejected with RetryAfter 0.
//     SuccessThreshold probe successes close the record (cooldown reset to
//     Policy.Cooldown); one probe Failure re-opens it with the cooldown
//     multiplied by CooldownMultiplier, capped at MaxCooldown.
//   - Fatal (401/402/403, quota exhausted) opens the record at once from any state
//     and is applied even when the decision is stale: a bad credential is bad
//     whenever the call was admitted. From Closed the cooldown is the current
//     one; from HalfOpen it grows as after a failed probe; from Open, openUntil
//     is pushed to at least now + the current cooldown.
//   - Released (caller error, cancellation, a throttled 429) frees the
//     decision's probe lease and changes nothing else.
//
// Fencing: Record applies Success, Failure and Released only when the decision
// is current — a Closed admission whose generation is still the record's
// generation while Closed, or a probe whose lease still exists (same token, not
// expired). Anything else is a fencing miss: Update.Applied is false and the
// record is untouched. A decision that was not allowed is always a miss.
//
// # Generations
//
// Every answer carries the record's generation and override at the instant it
// was decided: Decision.Generation and Decision.Forced, Update.Generation and
// Update.Forced, Snapshot.Generation and Snapshot.Forced. The generation
// grows on every transition (Closed → Open, Open → HalfOpen, HalfOpen →
// Closed or Open, every Force) and on nothing else, and a state or override
// never changes without it. So a caller that sees answers about one record
// from many goroutines can order them without reading the record again: a
// greater generation is a later state; an equal one is the same state and
// override (a HalfOpen answer, allowed or not, may differ only in leases).
// Only the order is promised, not the values: a fresh record is at
// generation 0, but the generations after it need not follow one another by
// 1 (the Redis gate draws them from the server's clock). Generations and
// probe lease tokens grow together, and none is handed out twice for one
// source, apart from the 0 of a record built again (below). Two limits,
// where a caller must read Snapshot to know:
//
//   - A record a backend forgot reads as a fresh Closed record at generation
//     0 until its first transition: a Redis record whose keys expired while
//     idle or were deleted (gate/redis). That transition's generation is
//     greater than every generation and token the forgotten record handed
//     out, so a decision granted before is stale for the record built again;
//     only a Closed admission of generation 0 (one the forgotten record
//     granted before its own first transition) is current again.
//   - A gate that answers from two records has two sequences that do not
//     compare: redis.Failover marks the Generation of the Decisions and
//     Updates of its fallback, like their tokens, with the top bit (its
//     Snapshot reports whichever record it read, unmarked).
//
// Noop always answers generation 0, Closed, no override.
//
// # The pinned RetryAfter contract
//
// RetryAfter always means "time until a certain earliest moment at which a
// retry can be admitted"; 0 means "no certain wait". It is never negative.
//
//	TryEnter allowed (Closed)                       0
//	TryEnter granted a probe                        0
//	TryEnter rejected, Open                         openUntil − now
//	TryEnter rejected, HalfOpen (probe in flight)   0 — never the lease length
//	Record, state afterwards HalfOpen or Closed     0
//	Record, state afterwards Open                   openUntil − now
//	RetryAfter(sources)                             minimum over the sources
//
// A HalfOpen rejection therefore fed into a max-only cooldown memo as
// now + 0 hides nothing: once the probe succeeds the source is admitted again
// at once; a recovered source is never hidden behind a stale probe wait.
package gate
