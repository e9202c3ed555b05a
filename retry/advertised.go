package retry

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/internal/callctx"
	"github.com/pgw-go/pgw/internal/respsink"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// answers collects the rate-limit headers of one attempt's upstream
// answers, read as they arrive (the transport's response sink) and applied
// to the admission once the attempt returns.
type answers struct {
	adm    *admission.SourceAdmission
	source string
	mu     sync.Mutex
	got    []provider.RateLimits
}

// Receive is the attempt's response sink (respsink.Receiver).
func (an *answers) Receive(_ int, h http.Header) {
	rl := an.adm.ReadAnswer(an.source, h) // an answer without figures counts too: the source is silent
	an.mu.Lock()
	an.got = append(an.got, rl)
	an.mu.Unlock()
}

// hearError hears the answer an attempt's error carries (StatusOf: an
// SDK's error keeps its answer's headers), when the attempt's transport
// brought no answer to the sink: an SDK on its own HTTP client hands pgw no
// other, and its 429 that says a window is spent must hold the source to
// the window's reset as the same answer through pgw's transports does.
func (an *answers) hearError(err error) {
	if an == nil || err == nil {
		return
	}
	an.mu.Lock()
	heard := len(an.got) > 0
	an.mu.Unlock()
	if heard {
		return
	}
	if status, h, ok := StatusOf(err); ok && len(h) > 0 {
		an.Receive(status, h)
	}
}

// listen installs the attempt's response sink on ctx when the admission
// reads rate-limit headers; nil otherwise.
func listen(ctx context.Context, adm *admission.SourceAdmission, source string) (context.Context, *answers) {
	if !adm.Advertising() {
		return ctx, nil
	}
	an := &answers{adm: adm, source: source}
	return transport.WithResponseSink(ctx, an.Receive), an
}

// listenOn is listen for an attempt's own Ctx with the answers it came
// with: the Ctx itself carries the sink, unless one is installed above it
// already (then the two are chained as WithResponseSink does).
func (an *answers) listenOn(ac *callctx.Ctx, adm *admission.SourceAdmission, source string) (context.Context, *answers) {
	if !adm.Advertising() {
		return ac, nil
	}
	an.adm, an.source = adm, source
	if ac.Value(respsink.Key{}) != nil {
		return transport.WithResponseSink(ac, an.Receive), an
	}
	ac.SetValue(respsink.Key{}, an)
	return ac, an
}

// applyTimeout bounds the budget refresh of an attempt whose caller is gone.
const applyTimeout = 2 * time.Second

// apply hands the answers to the admission, in the order they came. It
// runs even when the caller gave up: what the upstream said stays true.
func (an *answers) apply(ctx context.Context, adm *admission.SourceAdmission, source string) {
	if an == nil {
		return
	}
	an.mu.Lock()
	got := an.got
	an.got = nil
	an.mu.Unlock()
	if len(got) == 0 {
		return
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
		defer cancel()
	}
	for _, rl := range got {
		adm.Advertise(ctx, source, rl)
	}
}
