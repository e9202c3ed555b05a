package faultsuite

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// WorkerEnv is the environment variable that turns a process into a worker:
// it holds the worker's Spec as JSON.
const WorkerEnv = "PGW_FAULTSUITE_WORKER"

// workerIDEnv numbers the workers of one launch, from 0.
const workerIDEnv = "PGW_FAULTSUITE_WORKER_ID"

// The scopes a worker configures and the operations it runs.
const (
	ScopeChat  = "CHAT"
	ScopeEmbed = "EMBEDDING"
	// ScopeTool is a custom scope driven through pgw.Call.
	ScopeTool = "TOOL"
)

// The operations of a worker's load.
const (
	OpChat   = "chat"   // GatewayClient.Chat: a collected streamed answer
	OpStream = "stream" // GatewayClient.ChatStream, read to the end or abandoned
	OpEmbed  = "embed"  // GatewayClient.Embed
	OpTool   = "tool"   // pgw.Call in ScopeTool
)

// The results a worker sorts calls into.
const (
	ResultSuccess        = "success"
	ResultCircuitOpen    = "circuit_open"
	ResultQuotaExhausted = "quota_exhausted"
	ResultStalled        = "stalled"
	ResultUnavailable    = "unavailable"
	ResultCanceled       = "canceled"
	// ResultCut is a streamed answer cut after its first chunk (not retried).
	ResultCut = "cut"
	// ResultRedisDown is an error matching redis.ErrUnreachable.
	ResultRedisDown   = "redis_down"
	ResultCallerError = "caller_error"
	// ResultOther is anything else; it is never allowed.
	ResultOther = "other"
)

// Spec is what a worker runs. The zero value of each field means what its
// comment says.
type Spec struct {
	// Env holds the gateway's settings as environment keys (config.FromMap).
	// It must configure ScopeChat, ScopeEmbed and ScopeTool.
	Env map[string]string `json:"env"`
	// Goroutines is the number of goroutines making calls.
	Goroutines int `json:"goroutines"`
	// Mix weighs the operations (OpChat, OpStream, OpEmbed, OpTool); a
	// missing operation is never run.
	Mix map[string]int `json:"mix"`
	// Think is the most a goroutine pauses between two calls (uniform in
	// [0, Think)); 0 means no pause, a closed loop.
	Think time.Duration `json:"think"`
	// AbandonRate is the share of streams closed after their first chunk.
	AbandonRate float64 `json:"abandon_rate"`
	// CancelRate is the share of calls whose ctx is cancelled after a
	// random delay in [0, CancelWithin).
	CancelRate   float64       `json:"cancel_rate"`
	CancelWithin time.Duration `json:"cancel_within"`
	// Window is the stall budget's bound on a call's time outside its attempts: the
	// stall window plus one poll interval. Bound adds a slack for gate
	// round trips and scheduling: a call past Bound is a violation, one past
	// Window is counted, unless (either way) its scope kept delivering
	// while it waited — no pause between two of the scope's successes
	// longer than Bound while the call's time outside attempts was past
	// Bound too — then waiting on was legal.
	Window time.Duration `json:"window"`
	Bound  time.Duration `json:"bound"`
	// CancelBound is the most time a cancelled call may take to return
	// after its cancellation.
	CancelBound time.Duration `json:"cancel_bound"`
	// CloseBound is the most time the gateway's Close may take once the
	// load has stopped; 0 leaves it unchecked.
	CloseBound time.Duration `json:"close_bound"`
	// Allowed lists the results a call may end with; ResultOther never is.
	Allowed []string `json:"allowed"`
	// AllowedByOp, for the operations it names, replaces Allowed: the
	// results a call of that operation may end with.
	AllowedByOp map[string][]string `json:"allowed_by_op"`
	// OwnRedis makes the worker hand the gateway a Redis client of its own
	// (pgw.WithRedisClient), built as the gateway builds one (no retries)
	// with RedisReadTimeout, and count the replies it lost; otherwise the
	// gateway builds its client from PGW_REDIS_URL.
	OwnRedis bool `json:"own_redis"`
	// RedisAddr is the host:port that client dials; RedisReadTimeout is
	// its read timeout.
	RedisAddr        string        `json:"redis_addr"`
	RedisReadTimeout time.Duration `json:"redis_read_timeout"`
	// RetryAfterGrace is the slack around an upstream Retry-After within
	// which an attempt on the source is not counted against it (attempts
	// admitted while the 429 was on its way back). 0 turns the check off.
	RetryAfterGrace time.Duration `json:"retry_after_grace"`
	// Verbose copies the gateway's Warn lines to the worker's stderr, which
	// Launch copies to the parent's.
	Verbose bool `json:"verbose"`
}

// encode renders s for WorkerEnv.
func (s Spec) encode() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("faultsuite: encode spec: %w", err)
	}
	return string(b), nil
}

// specFromEnv reads the worker's Spec; ok is false when the process is not
// a worker.
func specFromEnv() (s Spec, ok bool, err error) {
	v := os.Getenv(WorkerEnv)
	if v == "" {
		return s, false, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, true, fmt.Errorf("faultsuite: %s holds no valid spec: %w", WorkerEnv, err)
	}
	if s.Goroutines < 1 {
		return s, true, fmt.Errorf("faultsuite: spec goroutines=%d (legal: ≥ 1)", s.Goroutines)
	}
	total := 0
	for op, w := range s.Mix {
		switch op {
		case OpChat, OpStream, OpEmbed, OpTool:
		default:
			return s, true, fmt.Errorf("faultsuite: spec mix has unknown operation %q (legal: chat, stream, embed, tool)", op)
		}
		total += max(w, 0)
	}
	if total == 0 {
		return s, true, fmt.Errorf("faultsuite: spec mix weighs nothing (legal: positive weights for chat, stream, embed, tool)")
	}
	return s, true, nil
}
