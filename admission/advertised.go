package admission

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
)

// Advertising configures how a SourceAdmission listens to its upstreams'
// rate-limit headers. The zero value (no Budget) reads none.
type Advertising struct {
	// Budget keeps each source's advertised figures as a budget Pick
	// reserves against, after the pacer (gate/memory.Budget in process,
	// gate/redis.Budget shared by the fleet); nil reads no headers.
	Budget gate.BudgetGate
	// Dialects is each source's rate-limit dialect (provider.DialectOf);
	// a source not listed speaks provider.DialectOpenAI.
	Dialects map[string]provider.Dialect
	// Configured is each source's configured RPM and TPM, compared with the
	// advertised limits: a difference is logged once per source at Info.
	Configured map[string]gate.Limits
}

// advertiser is a SourceAdmission's Advertising at work.
type advertiser struct {
	Advertising
	logged    sync.Map // source → struct{}: the limits mismatch was logged
	clamped   sync.Map // source → struct{}: a clamped reset was logged at Info
	malformed atomic.Uint64
	sources   map[string]*heard // read-only after New
}

// heard is what this process last heard from a source's answers. A source
// whose last answer advertised nothing, and whose figures heard before have
// all reset, is silent: Pick spares the budget's round trip for it. Until
// its first answer a source is not silent (the budget counts the calls made
// before anything is known).
type heard struct {
	silent atomic.Bool
	until  atomic.Int64 // unix ns: the last reset among the figures heard
}

func newAdvertiser(adv Advertising, sources []Source) *advertiser {
	a := &advertiser{Advertising: adv, sources: make(map[string]*heard, len(sources))}
	for _, s := range sources {
		a.sources[s.Name] = &heard{}
	}
	return a
}

// heardAnswer books one answer of source at now.
func (a *advertiser) heardAnswer(source string, rl provider.RateLimits, now time.Time) {
	h := a.sources[source]
	if h == nil {
		return
	}
	if !rl.Requests.Known() && !rl.Tokens.Known() {
		h.silent.Store(now.UnixNano() >= h.until.Load())
		return
	}
	until := now.Add(max(rl.Requests.Reset, rl.Tokens.Reset)).UnixNano()
	for {
		cur := h.until.Load()
		if cur >= until || h.until.CompareAndSwap(cur, until) {
			break
		}
	}
	h.silent.Store(false)
}

// Headroom is a Pacing that also takes what the upstream advertised as a
// signal: *Pacer shrinks a source's window when little is left.
type Headroom interface {
	// Headroom reports that an answer of source advertised remaining of
	// limit left in one of its windows.
	Headroom(source string, remaining, limit int64)
}

// Advertising reports whether the admission reads rate-limit headers.
func (a *SourceAdmission) Advertising() bool { return a.adv != nil }

// MalformedHeaders counts the rate-limit header values the admission
// ignored because it could not read them.
func (a *SourceAdmission) MalformedHeaders() uint64 {
	if a.adv == nil {
		return 0
	}
	return a.adv.malformed.Load()
}

// ReadAnswer reads the rate-limit headers of one upstream answer of source,
// in the source's dialect, at the admission's now. It is cheap and does no
// I/O: a transport's response sink calls it; Advertise then applies the
// result. Malformed values are ignored (logged at Debug and counted), resets
// beyond provider.MaxReset are clamped (logged at Info the first time for a
// source, at Debug after that); nothing fails.
func (a *SourceAdmission) ReadAnswer(source string, h http.Header) provider.RateLimits {
	if a.adv == nil {
		return provider.RateLimits{}
	}
	d := a.adv.Dialects[source]
	if d == "" {
		d = provider.DialectOpenAI
	}
	rl := provider.ParseRateLimits(d, h, a.clock.Now())
	if len(rl.Malformed) > 0 {
		a.adv.malformed.Add(uint64(len(rl.Malformed)))
		vals := make([]string, len(rl.Malformed))
		for i, name := range rl.Malformed {
			vals[i] = name + "=" + clipValue(h.Get(name))
		}
		a.log.LogAttrs(context.Background(), slog.LevelDebug, "pgw: unreadable rate-limit header ignored",
			slog.String("scope", a.scope), slog.String("source", source), slog.String("headers", strings.Join(vals, ", ")))
	}
	if len(rl.Clamped) > 0 {
		// A daily window resets hours ahead on every answer: Info once per
		// source, Debug after that.
		level := slog.LevelDebug
		if _, seen := a.adv.clamped.LoadOrStore(source, struct{}{}); !seen {
			level = slog.LevelInfo
		}
		a.log.LogAttrs(context.Background(), level, "pgw: rate-limit reset too far ahead; clamped",
			slog.String("scope", a.scope), slog.String("source", source),
			slog.String("headers", strings.Join(rl.Clamped, ", ")), slog.Duration("cap", provider.MaxReset))
	}
	return rl
}

// clipValue bounds a header value quoted in a log line.
func clipValue(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}

// Advertise applies what one upstream answer of source advertised (read by
// ReadAnswer): the budget is refreshed, the pacer told the headroom left,
// and a limit that differs from the configured one logged once. Hand it
// every answer, also those that advertised nothing: once a source's answers
// advertise nothing (and what they advertised before has reset), Pick stops
// asking the budget about it — no round trip for upstreams that send no
// rate-limit headers — until an answer advertises again. A store
// error is logged at Debug and otherwise ignored: the budget only ever
// holds calls back, and the upstream's own 429 still stands behind it.
func (a *SourceAdmission) Advertise(ctx context.Context, source string, rl provider.RateLimits) {
	if a.adv == nil {
		return
	}
	a.adv.heardAnswer(source, rl, a.clock.Now())
	if !rl.Any() {
		return
	}
	adv := gate.Advertised{Requests: window(rl.Requests), Tokens: window(rl.Tokens)}
	if err := a.adv.Budget.Refresh(ctx, source, adv); err != nil {
		a.log.LogAttrs(ctx, slog.LevelDebug, "pgw: advertised budget not refreshed",
			slog.String("scope", a.scope), slog.String("source", source), slog.Any("err", err))
	}
	if hp, ok := a.pacer.(Headroom); ok && a.pacer != nil {
		for _, w := range []provider.Window{rl.Requests, rl.Tokens} {
			if w.Known() && w.Limit > 0 {
				hp.Headroom(source, w.Remaining, w.Limit)
			}
		}
	}
	a.compareLimits(ctx, source, rl)
	if ao, ok := a.w.obs.(observe.AdvertisedObserver); ok && a.w.obs != nil {
		ao.ObserveAdvertised(observe.Advertised{
			Scope: a.scope, Source: source,
			Requests: observe.AdvertisedWindow(adv.Requests), Tokens: observe.AdvertisedWindow(adv.Tokens),
			At: a.clock.Now(),
		})
	}
}

// window is a parsed window in the budget's terms.
func window(w provider.Window) gate.AdvertisedWindow {
	if !w.Known() && w.Limit < 0 {
		return gate.UnknownWindow
	}
	return gate.AdvertisedWindow{Limit: w.Limit, Remaining: w.Remaining, Reset: w.Reset}
}

// compareLimits logs, once per source, an advertised per-minute limit that
// differs from the configured RPM or TPM.
func (a *SourceAdmission) compareLimits(ctx context.Context, source string, rl provider.RateLimits) {
	conf := a.adv.Configured[source]
	reqDiff := !rl.Requests.PerDay && rl.Requests.Limit >= 0 && conf.RPM > 0 && rl.Requests.Limit != int64(conf.RPM)
	tokDiff := !rl.Tokens.PerDay && rl.Tokens.Limit >= 0 && conf.TPM > 0 && rl.Tokens.Limit != int64(conf.TPM)
	if !reqDiff && !tokDiff {
		return
	}
	if _, seen := a.adv.logged.LoadOrStore(source, struct{}{}); seen {
		return
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "pgw: the upstream advertises other rate limits than configured",
		slog.String("scope", a.scope), slog.String("source", source),
		slog.Int("configured_rpm", conf.RPM), slog.Int64("advertised_requests", rl.Requests.Limit),
		slog.Int("configured_tpm", conf.TPM), slog.Int64("advertised_tokens", rl.Tokens.Limit))
}

// Advertised returns source's advertised budget as it stands (one gate
// operation); ok is false when nothing was advertised for it or the
// admission reads no headers.
func (a *SourceAdmission) Advertised(ctx context.Context, source string) (gate.Advertised, bool, error) {
	if a.adv == nil {
		return gate.Advertised{Requests: gate.UnknownWindow, Tokens: gate.UnknownWindow}, false, nil
	}
	return a.adv.Budget.Read(ctx, source)
}

// takeBudget reserves t's call against the advertised budget of its source.
// It reports false, with the rejection, when the budget has no room; a
// store error admits (the budget only holds calls back) and is logged at
// Debug.
func (a *SourceAdmission) takeBudget(ctx context.Context, name string, estTokens int64) (Rejection, string, bool) {
	d, err := a.adv.Budget.Take(ctx, name, estTokens)
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelDebug, "pgw: advertised budget not checked",
			slog.String("scope", a.scope), slog.String("source", name), slog.Any("err", err))
		return Rejection{}, "", true
	}
	if d.Allowed {
		return Rejection{}, "", true
	}
	return Rejection{Source: name, Reason: RateLimited, RetryAfter: d.RetryAfter}, d.Limit, false
}
