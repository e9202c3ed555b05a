package pgw

import (
	"log/slog"
	"net/http"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Option configures a GatewayClient (New, NewFromEnv).
type Option func(*options)

type options struct {
	logger     *slog.Logger
	observer   Observer
	chat       ChatTransport
	embed      EmbedTransport
	ocr        OCRTransport
	httpClient *http.Client
	redis      goredis.UniversalClient
	backoff    Backoff
	firstToken time.Duration
	concurrent int
}

// WithLogger sets the logger of the gateway and everything it builds
// (default slog.Default()). Waits, Redis outages and breaker state changes
// are logged at Info or Warn; every attempt at Debug. A nil logger keeps the
// default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithObserver makes the gateway report to obs every attempt and every
// breaker state change it sees, and the optional events obs implements the
// interfaces of (see Observer). A nil obs reports nothing.
func WithObserver(obs Observer) Option {
	return func(o *options) { o.observer = obs }
}

// WithChatTransport replaces the default OpenAI-compatible chat transport
// (used by Chat and ChatStream) with tr, e.g. an adapter over a vendor SDK.
// The gateway does not close it.
func WithChatTransport(tr ChatTransport) Option {
	return func(o *options) { o.chat = tr }
}

// WithEmbedTransport replaces the default embedding transport (Embed).
func WithEmbedTransport(tr EmbedTransport) Option {
	return func(o *options) { o.embed = tr }
}

// WithOCRTransport replaces the default OCR transport (OCR, OCRPages).
func WithOCRTransport(tr OCRTransport) Option {
	return func(o *options) { o.ocr = tr }
}

// WithHTTPClient makes the default transports send through hc instead of a
// connection pool of their own. hc should have no Timeout: the gateway bounds
// every attempt by the source's TIMEOUT_S through the request's context, and
// an http.Client Timeout would cut long streamed answers. The gateway does
// not close hc's idle connections on Close; it does close its own pool's.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) { o.httpClient = hc }
}

// WithRedisClient makes the redis backends use c (a single node, a cluster
// or a sentinel-backed client) instead of a client built from
// PGW_REDIS_URL / PGW_REDIS_CLUSTER_ADDRS. The gateway does not close c.
// The gate scripts are sent at most once whatever c's retry settings (a
// script is not idempotent); give c ContextTimeoutEnabled so that the
// caller's deadline bounds every gate operation, as the client the gateway
// builds itself does.
func WithRedisClient(c goredis.UniversalClient) Option {
	return func(o *options) { o.redis = c }
}

// WithBackoff sets the backoff between failed attempts of a call (default:
// base 200 ms, cap 10 s, full jitter). Zero fields keep their defaults.
func WithBackoff(b Backoff) Option {
	return func(o *options) { o.backoff = b }
}

// WithFirstTokenTimeout bounds the wait for the first chunk of each chat
// attempt: a source that sends nothing for d counts as a failure and the call
// fails over. 0 (the default) leaves only the source's TIMEOUT_S, which bounds
// the whole stream. It applies to Chat and ChatStream; a stream read through
// HTTPClient or CallStream waits for its first content within the source's
// TIMEOUT_S.
func WithFirstTokenTimeout(d time.Duration) Option {
	return func(o *options) { o.firstToken = max(d, 0) }
}

// WithConcurrency bounds the embedding sub-batches and OCR pages one call
// runs at once (default 4; n ≤ 0 keeps the default). When every source of
// the scope has a MAX_IN_FLIGHT, their sum bounds it too, so that a call's
// parts never wait for (or, under QUOTA_FULL=fail_fast, are refused) the
// slots its other parts hold.
func WithConcurrency(n int) Option {
	return func(o *options) { o.concurrent = max(n, 0) }
}
