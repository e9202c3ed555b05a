// Package memory holds the in-process implementations of pgw's gate ports: a
// breaker gate (Breaker) and a quota gate (Quota). State lives in this
// process only; use gate/redis to share it between processes.
//
// Every type here is safe for concurrent use. Sources do not contend on one
// global lock: each source has its own record and mutex.
package memory
