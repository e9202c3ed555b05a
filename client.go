package pgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/anthropic"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/byname"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/ownpanic"
	"github.com/pgw-go/pgw/internal/redisaddr"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/retry"
)

// ErrClosed is returned by every call made after GatewayClient.Close, and by
// calls that Close interrupted.
var ErrClosed = errs.ErrClosed

// GatewayClient makes governed calls to the upstreams of its scopes: every
// call goes through admission (memo, breaker, quota, pacer), retries with
// backoff and fail-over, and the scope's stall budget. Build one
// per process with New or NewFromEnv, share it, and Close it at shutdown.
// Safe for concurrent use, Close included. The zero value is not usable:
// its methods, Close included, return an error saying it was not built by
// New or NewFromEnv.
type GatewayClient struct {
	scopes map[string]*scope
	byName byname.Index[*scope] // scopes, for the hot path
	names  []string             // configured scopes, in settings order
	log    *slog.Logger
	creds  credIndex // each source's credentials, by scope (sourceCredentials)

	redis    goredis.UniversalClient // closed by Close when ownRedis
	redisLog *redisRoute             // go-redis's lines to log; nil without redis
	ownRedis bool
	writer   *admission.Writer // gives back outcomes off the callers' path; nil without redis
	prober   *redis.Prober     // decides redis outages, writes the heartbeat; nil without redis
	httpPool *openai.Client    // the default transports' pool, when the gateway made it
	antPool  *anthropic.Client // the Anthropic transport's pool, when the gateway made it

	// The governed http.Client's pool (HTTPClient): WithHTTPClient's, or
	// made at first use and closed by Close.
	sdkHTTP    *http.Client
	ownSDKHTTP bool
	sdkOnce    sync.Once

	life context.Context // cancelled (cause ErrClosed) by Close
	kill context.CancelCauseFunc

	mu      sync.Mutex // guards closed and streams
	closed  bool
	streams map[*Stream]struct{}

	// The calls in flight, streams' included, under liveMu, all in one
	// place that each call's start and end touch: Close ends their ctx and
	// waits for the last of them.
	liveMu  sync.Mutex
	live    *call         // a doubly linked list
	liveN   int           // its length
	shut    bool          // Close began: no call registers any more
	drained chan struct{} // closed when liveN reaches 0 once Close waits; nil before

	closeOnce sync.Once
	closeErr  error
}

// scope is one configured scope: its loop and the typed loops over it.
type scope struct {
	name    string
	limits  map[string]gate.Limits // configured, by source
	loop    *retry.Loop
	breaker gate.ProviderGate
	sources map[string]bool
	chat    *retry.Chat
	embed   *retry.Embed
	ocr     *retry.OCR
}

// NewFromEnv builds a GatewayClient from the environment (config.FromEnv,
// see package config). Invalid settings return one *ConfigError listing every bad key.
//
// Every problem comes in that one error: parse errors, unknown keys, rules
// between keys, and the BASE_URL of each source the default transport would
// call without one.
func NewFromEnv(ctx context.Context, opts ...Option) (*GatewayClient, error) {
	s, err := config.FromEnvRequiring(requirements(buildOptions(opts))...)
	if err != nil {
		return nil, public(err)
	}
	return New(ctx, *s, opts...)
}

// New builds a GatewayClient from s: one breaker gate, quota gate, admission
// and loop per scope, on the backends s names (memory, redis, noop). Zero
// fields of s mean their defaults; invalid settings return one *ConfigError
// listing every problem.
//
// With a redis backend, go-redis's own log lines (dial failures, …), which
// it writes through one process-wide logger, go to this gateway's logger at
// Debug instead of stderr. New loads the gate scripts, bounded by ctx: when
// Redis does not answer, PGW_REDIS_DOWN=fail_closed makes New fail with an
// error matching redis.ErrUnreachable, and fail_open logs a warning and
// serves from local gates until Redis answers.
func New(ctx context.Context, s Settings, opts ...Option) (*GatewayClient, error) {
	o := buildOptions(opts)
	if err := s.ValidateRequiring(requirements(o)...); err != nil {
		return nil, public(err)
	}
	s = s.WithDefaults()
	g := &GatewayClient{
		scopes:  make(map[string]*scope, len(s.Scopes)),
		log:     o.logger,
		creds:   sourceCredentials(s),
		streams: map[*Stream]struct{}{},
		sdkHTTP: o.httpClient,
	}
	g.life, g.kill = context.WithCancelCause(context.Background())

	usesRedis := s.BreakerBackend == config.BackendRedis || s.QuotaBackend == config.BackendRedis
	if usesRedis {
		g.redisLog = routeRedisLog(o.logger)
		g.redis = o.redis
		if g.redis == nil {
			rc, err := newRedisClient(s.Redis)
			if err != nil {
				g.release()
				return nil, err
			}
			g.redis, g.ownRedis = rc, true
		}
		w, err := admission.NewWriter(admission.WriterConfig{Logger: o.logger, Credentials: g.credentials})
		if err != nil {
			g.release()
			return nil, err
		}
		g.writer = w
		mode, err := redis.ParseMode(string(s.Redis.Down))
		if err != nil {
			g.release()
			return nil, public(err)
		}
		pr, err := redis.NewProber(g.redis, redis.WithProberPrefix(s.Redis.Prefix),
			redis.WithProberMode(mode), redis.WithProberLogger(o.logger),
			redis.WithProbeInterval(s.Redis.ProbeInterval), redis.WithProbeTimeout(s.Redis.ProbeTimeout),
			redis.WithProbeBackoff(s.Redis.ProbeBackoff), redis.WithHeartbeatTTL(s.Redis.HeartbeatTTL))
		if err != nil {
			g.release()
			return nil, public(err)
		}
		g.prober = pr
	}
	fail := func(err error) (*GatewayClient, error) {
		g.release()
		return nil, public(err)
	}

	chat, embed, ocr := o.chat, o.embed, o.ocr
	if chat == nil || embed == nil || ocr == nil {
		def := openai.New(openai.WithHTTPClient(o.httpClient))
		if o.httpClient == nil {
			g.httpPool = def // its own pool: Close closes its idle connections
		}
		ant := anthropic.New(anthropic.WithHTTPClient(o.httpClient))
		if o.httpClient == nil {
			g.antPool = ant
		}
		if chat == nil {
			chat = providerChat{openai: def, anthropic: ant}
		}
		if embed == nil {
			embed = def
		}
		if ocr == nil {
			ocr = providerOCR{openai: def, anthropic: ant}
		}
	}
	// Attempts are logged at Debug through the loops' observer, next to the
	// caller's.
	obs := observe.Multi(attemptLog{log: o.logger, creds: g.creds}, o.observer)

	var preloadBreaker, preloadQuota, preloadBudget func(context.Context) error
	for _, sc := range s.Scopes {
		gates, err := buildGates(&s, sc, g.redis, g.prober, o.logger)
		if err != nil {
			return fail(fmt.Errorf("pgw: scope %q: %w", sc.Name, err))
		}
		if preloadBreaker == nil {
			preloadBreaker = gates.preloadBreaker
		}
		if preloadQuota == nil {
			preloadQuota = gates.preloadQuota
		}
		cfg := retry.Config{
			Scope:    sc,
			Breaker:  gates.breaker,
			Quota:    gates.quota,
			Backoff:  o.backoff,
			Logger:   o.logger,
			Observer: obs,
			Writer:   g.writer,
		}
		cfg.Advertising = gates.advertising
		if gates.preloadBudget != nil && preloadBudget == nil {
			preloadBudget = gates.preloadBudget
		}
		if sc.Name == ScopeChat {
			p, err := newPacer(sc)
			if err != nil {
				return fail(err)
			}
			cfg.Pacer = p
		}
		loop, err := retry.New(cfg)
		if err != nil {
			return fail(fmt.Errorf("pgw: scope %q: %w", sc.Name, err))
		}
		sp := &scope{name: sc.Name, loop: loop, breaker: gates.breaker, sources: make(map[string]bool, len(sc.Sources))}
		sp.limits = gates.advertising.Configured
		for _, src := range sc.Sources {
			sp.sources[src.Name] = true
		}
		switch sc.Name {
		case ScopeChat:
			sp.chat = retry.NewChat(loop, chat, retry.ChatOptions{FirstTokenTimeout: o.firstToken})
		case ScopeEmbedding:
			sp.embed = retry.NewEmbed(loop, embed, o.concurrent)
		case ScopeOCR:
			sp.ocr = retry.NewOCR(loop, ocr, o.concurrent)
		}
		g.scopes[sc.Name] = sp
		g.names = append(g.names, sc.Name)
	}
	g.byName = byname.Of(g.scopes)

	for _, load := range []func(context.Context) error{preloadBreaker, preloadQuota, preloadBudget} {
		if load == nil {
			continue
		}
		err := load(ctx)
		if err == nil {
			continue
		}
		// fail_open starts on local gates when Redis does not answer in time;
		// a cancelled start is no outage.
		if s.Redis.Down == config.RedisFailClosed || errors.Is(ctx.Err(), context.Canceled) {
			if errors.Is(err, context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.Canceled) && !errors.Is(err, redis.ErrUnreachable) {
				// A Redis that accepts connections but never answers ran
				// out New's deadline: it did not answer, which is an
				// unreachable Redis to a gateway that must start on it.
				err = &redis.UnreachableError{Op: "Preload", Err: err}
			}
			return fail(fmt.Errorf("pgw: loading the gate scripts into redis: %w", err))
		}
		o.logger.Warn("pgw: redis unreachable at start; gates serve from local memory until it answers",
			"addr", redisaddr.Of(g.redis), "mode", string(s.Redis.Down), "err", err.Error())
		break
	}
	return g, nil
}

// buildOptions applies opts over the defaults.
func buildOptions(opts []Option) options {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// requirements are the keys the gateway's default transports need, checked
// with every other problem in one *ConfigError: BASE_URL of every source of
// a typed scope (CHAT, EMBEDDING, OCR) that the default transport serves (a
// call without one could never succeed, so it is a configuration error, not
// a runtime one), and a PROVIDER other than anthropic for the EMBEDDING
// sources the default transport serves (Anthropic has no embeddings API).
func requirements(o options) []config.Requirement {
	var scopes []string
	for name, def := range map[string]bool{ScopeChat: o.chat == nil, ScopeEmbedding: o.embed == nil, ScopeOCR: o.ocr == nil} {
		if def {
			scopes = append(scopes, name)
		}
	}
	if len(scopes) == 0 {
		return nil
	}
	reqs := []config.Requirement{{
		Scopes: scopes,
		Key:    "BASE_URL",
		Legal:  "an absolute http(s) URL: the default transport needs it (or plug a transport in with pgw.With…Transport)",
	}}
	if o.embed == nil {
		reqs = append(reqs, config.Requirement{
			Scopes: []string{ScopeEmbedding},
			Key:    "PROVIDER",
			Legal:  "openai or azure: Anthropic has no embeddings API (or plug a transport in with pgw.WithEmbedTransport)",
			Allow:  func(v string) bool { return v != string(config.ProviderAnthropic) },
		})
	}
	return reqs
}

// Scopes returns the names of the configured scopes, in settings order.
func (g *GatewayClient) Scopes() []string {
	if g == nil {
		return nil
	}
	return append([]string(nil), g.names...)
}

// Chat runs a governed chat completion in the CHAT scope and collects the
// streamed answer. Nothing reaches the caller before the answer is whole,
// so an attempt whose stream is cut half-way is a failed attempt like any
// other: the call retries and fails over. A request without messages, with
// an illegal value, or with a field a source of the scope cannot carry is a
// *RequestError before admission.
func (g *GatewayClient) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	sc, err := g.typed(ScopeChat)
	if err != nil {
		return ChatResponse{}, err
	}
	c, err := g.enter(ctx)
	if err != nil {
		return ChatResponse{}, err
	}
	defer c.endOnPanic()
	resp, err := sc.chat.Complete(&c.cc, req)
	return resp, c.end(err)
}

// ChatStream opens a governed streamed chat completion in the CHAT scope. It
// returns once the first chunk has arrived; until then the call retries and
// fails over, after it a failure is returned by Recv. The stream holds its
// source's admission (probe lease, quota permit or in-flight slot, pacer
// slot) until it ends: read it to io.EOF or Close it. ctx bounds the whole
// stream: when it ends (cancelled, or its deadline passed) the stream is
// closed and its admission given back as Released, as if the caller had
// closed it, even if the stream is never read again; a later Recv returns
// the ctx's cause. Close the stream all the same. A request that cannot be
// sent is a *RequestError before admission, as with Chat.
func (g *GatewayClient) ChatStream(ctx context.Context, req ChatRequest) (*Stream, error) {
	sc, err := g.typed(ScopeChat)
	if err != nil {
		return nil, err
	}
	c, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	ended := false
	defer func() {
		if !ended { // the transport panicked: release the call, let the panic go on
			c.endOnPanic()
		}
	}()
	st, err := sc.chat.Stream(&c.cc, req)
	ended = true
	if err != nil {
		return nil, c.end(err)
	}
	s := &Stream{g: g, st: st, c: c, scope: sc.name}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		_ = s.Close()
		return nil, ErrClosed
	}
	g.streams[s] = struct{}{}
	g.mu.Unlock()
	// The call's ctx ending — the caller's cancellation or deadline, the
	// gateway's Close — closes the stream: no goroutine waits for it, and
	// the stream's own end disarms it.
	s.guard.arm(&c.cc, g, sc.name, func() { _ = s.Close() })
	return s, nil
}

// Embed runs a governed embedding call in the EMBEDDING scope: inputs beyond
// the smallest BATCH_SIZE of the scope's sources are split into sub-batches,
// each its own governed call, run concurrently (WithConcurrency); vectors
// come back in input order. When some sub-batches fail, the others' vectors
// are returned with a *BatchError. A request without inputs, or with an
// input that is the empty string, is a *RequestError before admission.
func (g *GatewayClient) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	sc, err := g.typed(ScopeEmbedding)
	if err != nil {
		return EmbedResponse{}, err
	}
	c, err := g.enter(ctx)
	if err != nil {
		return EmbedResponse{}, err
	}
	defer c.endOnPanic()
	resp, err := sc.embed.Embed(&c.cc, req)
	return resp, c.end(err)
}

// OCR runs a governed OCR call in the OCR scope: one image, one attempt at a
// time. No token estimate is reserved against TPM (what an image costs in
// tokens is the provider's business); the reported usage is settled. The
// response's FinishReason says when the answer's bound cut the
// transcription short ("length"), and Refusal when the model would not read
// the image. A request without an image is a *RequestError before
// admission.
func (g *GatewayClient) OCR(ctx context.Context, req OCRRequest) (OCRResponse, error) {
	sc, err := g.typed(ScopeOCR)
	if err != nil {
		return OCRResponse{}, err
	}
	c, err := g.enter(ctx)
	if err != nil {
		return OCRResponse{}, err
	}
	defer c.endOnPanic()
	resp, err := sc.ocr.OCR(&c.cc, req)
	return resp, c.end(err)
}

// OCRPages reads every page in the OCR scope, pages concurrently
// (WithConcurrency), each its own governed call; results are in page order.
// When some pages fail, the others are returned with a *BatchError. No
// pages, or a page without an image, is a *RequestError before any page is
// sent.
func (g *GatewayClient) OCRPages(ctx context.Context, pages []OCRRequest) ([]OCRResponse, error) {
	sc, err := g.typed(ScopeOCR)
	if err != nil {
		return nil, err
	}
	c, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer c.endOnPanic()
	resp, err := sc.ocr.Pages(&c.cc, pages)
	return resp, c.end(err)
}

// Snapshot reads the breaker record of one source of a scope, without moving
// it (with the Redis backend: one round trip), with the source's configured
// quota and the budget its upstream last advertised (one more).
func (g *GatewayClient) Snapshot(ctx context.Context, scopeName, source string) (Snapshot, error) {
	sc, err := g.scope(scopeName)
	if err != nil {
		return Snapshot{}, err
	}
	if !sc.sources[source] {
		return Snapshot{}, fmt.Errorf("pgw: scope %q has no source %q", scopeName, source)
	}
	c, err := g.enter(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	defer c.endOnPanic()
	snap, err := sc.breaker.Snapshot(&c.cc, source)
	if err == nil {
		err = sc.advertised(&c.cc, source, &snap)
	}
	return snap, c.end(err)
}

// Admission returns the admission of a scope, for inspection (its memo, its
// sources' cooldowns) and for callers that build their own loops.
func (g *GatewayClient) Admission(scopeName string) (*admission.SourceAdmission, error) {
	sc, err := g.scope(scopeName)
	if err != nil {
		return nil, err
	}
	return sc.loop.Admission(), nil
}

// Close releases everything the gateway holds. Calls in flight are
// interrupted (they return ErrClosed) and open streams are closed; Close
// waits for them, and for the hedged attempts that lost their races, to
// give back their admissions — with a Redis backend it
// flushes their queued outcomes to Redis for at most 2 s — then closes the
// Redis client it created and the idle connections of its default transports. Calls made
// after Close return ErrClosed. Close is idempotent: later calls return the
// first call's result. A Call function that ignores its ctx delays Close
// until it returns.
func (g *GatewayClient) Close() error {
	if g == nil {
		return errNilClient
	}
	if g.kill == nil {
		return errNotBuilt
	}
	g.closeOnce.Do(func() {
		g.mu.Lock()
		g.closed = true
		streams := make([]*Stream, 0, len(g.streams))
		for s := range g.streams {
			streams = append(streams, s)
		}
		g.mu.Unlock()
		g.kill(ErrClosed)
		g.interruptCalls()
		var p any // the first panic of an observer a stream's end reported to
		for _, s := range streams {
			p = g.closeStream(s, p)
		}
		g.waitCalls()
		for _, sc := range g.scopes {
			// Hedge losers give back after their calls returned.
			sc.loop.WaitHedges()
		}
		g.closeErr = g.release()
		if p != nil {
			// Everything is released; the panic goes on to Close's caller,
			// as it would to a caller of the stream's own Close.
			panic(p)
		}
	})
	return g.closeErr
}

// closeStream closes s for Close, which goes on whatever the observer its
// end reports to does: a panic of it is returned when first is nil (Close
// raises it once it has released everything), logged otherwise.
func (g *GatewayClient) closeStream(s *Stream, first any) (p any) {
	if first != nil {
		ownpanic.Run(g.log, func(p any) string { return ownpanic.Redact(g.credentials(s.scope, ""))(p) }, func() { _ = s.Close() }, s.scope, s.Source())
		return first
	}
	defer func() {
		if r := recover(); r != nil {
			p = r
		}
	}()
	_ = s.Close()
	return nil
}

// OutcomeWriterStats reports what the gateway's outcome writer has done:
// outcomes written, failed and dropped (each of the last two leaves its
// probe or in-flight lease to expire by itself), and how many are queued.
// A gateway without Redis has no writer and reports zeros.
func (g *GatewayClient) OutcomeWriterStats() admission.WriterStats {
	if g == nil || g.writer == nil {
		return admission.WriterStats{}
	}
	return g.writer.Stats()
}

// writerCloseBound is how long Close lets the outcome writer flush: the
// outcomes queued when the last call ended get one write timeout, then the
// rest are dropped (their leases expire by themselves).
const writerCloseBound = admission.DefaultWriterTimeout + time.Second

// release closes what the gateway created.
func (g *GatewayClient) release() error {
	g.kill(ErrClosed)
	var err error
	if g.prober != nil {
		g.prober.Close()
	}
	if g.writer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), writerCloseBound)
		if e := g.writer.Close(ctx); e != nil {
			g.log.Warn("pgw: closing the outcome writer", "err", e.Error())
		}
		cancel()
	}
	if g.ownRedis && g.redis != nil {
		if e := g.redis.Close(); e != nil && !errors.Is(e, goredis.ErrClosed) {
			err = fmt.Errorf("pgw: closing the redis client: %w", e)
		}
	}
	g.redisLog.stop()
	if g.httpPool != nil {
		g.httpPool.CloseIdleConnections()
	}
	if g.antPool != nil {
		g.antPool.CloseIdleConnections()
	}
	g.sdkOnce.Do(func() {}) // no pool is made after this
	if g.ownSDKHTTP {
		g.sdkHTTP.CloseIdleConnections()
	}
	return err
}

// typed returns the scope of a typed method, with an error naming the key
// to set when it is not configured.
func (g *GatewayClient) typed(name string) (*scope, error) {
	return g.scope(name)
}

// errNilClient is what a method called on a nil *GatewayClient returns.
var errNilClient = errors.New("pgw: nil *GatewayClient")

// errNotBuilt is what a method of a GatewayClient that New did not build
// (a zero value) returns.
var errNotBuilt = errors.New("pgw: GatewayClient not built by New or NewFromEnv (its zero value is not usable)")

func (g *GatewayClient) scope(name string) (*scope, error) {
	if g == nil {
		return nil, errNilClient
	}
	if sc, _ := g.byName.Get(name); sc != nil {
		return sc, nil
	}
	if g.kill == nil {
		return nil, errNotBuilt
	}
	return nil, &UnknownScopeError{Scope: name, Configured: g.Scopes()}
}

// UnknownScopeError is returned by a call to a scope that is not configured:
// not listed in PGW_SCOPES, or without {SCOPE}__SOURCES.
type UnknownScopeError struct {
	// Scope is the name asked for.
	Scope string
	// Configured are the configured scopes.
	Configured []string
}

// Code returns "PGW-SCOPE".
func (e *UnknownScopeError) Code() string { return CodeUnknownScope }

// Error implements the error interface.
func (e *UnknownScopeError) Error() string {
	return fmt.Sprintf("pgw: scope %q is not configured (configured: %s); list it in PGW_SCOPES and set %s__SOURCES",
		e.Scope, strings.Join(e.Configured, ", "), e.Scope)
}

// CodeUnknownScope is the code of UnknownScopeError.
const CodeUnknownScope = "PGW-SCOPE"
