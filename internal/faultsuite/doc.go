// Package faultsuite puts GatewayClients under load in several OS processes
// and checks pgw's invariants while faults are injected around them: Redis
// killed and restarted, its script cache flushed, its clients killed, Redis
// made slow, a Redis Cluster's hash slot migrated between masters or failed
// over (SlotTopology), upstream 5xx and 429 storms, streams cut mid-answer, callers
// cancelling at random points. Its tests are the fault suite;
// cmd/pgw-soak runs the same workers for a bounded soak.
//
// A parent (a test, or the soak) starts workers with Launch: the same binary
// re-executed with WorkerEnv set, each running a GatewayClient on the Redis
// backend and Spec.Goroutines goroutines of governed calls — Chat, ChatStream,
// Embed and Call — against fake upstreams. A binary that launches workers
// calls MaybeRunWorker first thing in main (or TestMain).
//
// What a worker checks, per call and at the end:
//
//   - every call ends with a result its scenario allows (Spec.Allowed); with
//     PGW_REDIS_DOWN=fail_open no call fails because of Redis;
//   - stall: the call's time outside its transport attempts stays within
//     Spec.Bound (the stall window plus one poll interval plus a slack), or
//     the scope kept delivering: at no instant of the call had both its time
//     outside attempts and the time since its scope's last success passed
//     that bound — the one case in which the stall budget lets a waiting
//     call go on;
//   - a cancelled call returns within Spec.CancelBound of the cancellation;
//   - no attempt starts on a source while an upstream Retry-After this
//     process received for it is running;
//   - Close returns within Spec.CloseBound, and after it no goroutine of
//     pgw, go-redis or net/http's connection pool is left.
//
// The worker reports every probe attempt (start and end); the parent checks
// that no two probes of one source overlapped across processes outside a
// Redis outage (at most one probe per lease, HalfOpenProbes 1), and reads
// Redis for leaked in-flight and probe leases (Inspect).
package faultsuite
