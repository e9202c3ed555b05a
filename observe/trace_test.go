package observe_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/observe"
)

type keyA struct{}

// ctxObs is a ContextObserver that adds its name to a list in the ctx.
type ctxObs struct {
	observe.Nop
	name string
}

func chain(ctx context.Context, name string) context.Context {
	prev, _ := ctx.Value(keyA{}).(string)
	return context.WithValue(ctx, keyA{}, prev+name)
}

func (o ctxObs) StartCall(ctx context.Context, _ observe.CallStart) context.Context {
	return chain(ctx, o.name)
}
func (o ctxObs) StartAttempt(ctx context.Context, _ observe.AttemptStart) context.Context {
	return chain(ctx, o.name)
}
func (ctxObs) EndAttempt(context.Context, observe.AttemptRecord) {}
func (ctxObs) EndWait(context.Context, observe.WaitEnd)          {}
func (ctxObs) EndCall(context.Context, observe.CallResult)       {}

func TestAsContext(t *testing.T) {
	assert.Nil(t, observe.AsContext(nil))
	assert.Nil(t, observe.AsContext(observe.Nop{}))
	assert.Nil(t, observe.AsContext(observe.Multi(observe.Nop{}, observe.Funcs{})), "a Multi of plain observers follows no ctx")
	assert.NotNil(t, observe.AsContext(ctxObs{name: "a"}))

	m := observe.AsContext(observe.Multi(ctxObs{name: "a"}, observe.Nop{}, ctxObs{name: "b"}))
	if assert.NotNil(t, m) {
		ctx := m.StartCall(context.Background(), observe.CallStart{})
		assert.Equal(t, "ab", ctx.Value(keyA{}), "each member's ctx is handed to the next")
		ctx = m.StartAttempt(ctx, observe.AttemptStart{})
		assert.Equal(t, "abab", ctx.Value(keyA{}))
	}
}

// bareCtxObs is a ContextObserver and a HedgeContextObserver that
// implements nothing else: not a Full, as a user's tracer may well be.
type bareCtxObs struct {
	name   string
	hedges *[]string
}

func (bareCtxObs) ObserveAttempt(observe.AttemptRecord)   {}
func (bareCtxObs) ObserveStateChange(observe.StateChange) {}
func (o bareCtxObs) StartCall(ctx context.Context, _ observe.CallStart) context.Context {
	return chain(ctx, o.name)
}
func (o bareCtxObs) StartAttempt(ctx context.Context, _ observe.AttemptStart) context.Context {
	return chain(ctx, o.name)
}
func (bareCtxObs) EndAttempt(context.Context, observe.AttemptRecord) {}
func (bareCtxObs) EndWait(context.Context, observe.WaitEnd)          {}
func (bareCtxObs) EndCall(context.Context, observe.CallResult)       {}
func (o bareCtxObs) ObserveHedgeContext(ctx context.Context, e observe.Hedge) {
	*o.hedges = append(*o.hedges, o.name+":"+e.Event)
}

// A member of a Multi that is a ContextObserver but not a Full (Multi wraps
// it in AsFull's adapter) still follows each call's ctx and hears each
// hedge with it; a Multi of the adapter alone is one too.
func TestAsContextSeesAContextObserverThatIsNotAFull(t *testing.T) {
	var hedges []string
	bare := bareCtxObs{name: "a", hedges: &hedges}
	for _, o := range []observe.Observer{observe.Multi(observe.Nop{}, bare), observe.AsFull(bare), observe.Multi(observe.AsFull(bare))} {
		m := observe.AsContext(o)
		if !assert.NotNil(t, m, "%T", o) {
			continue
		}
		ctx := m.StartCall(context.Background(), observe.CallStart{})
		assert.Equal(t, "a", ctx.Value(keyA{}))
		if h, ok := m.(observe.HedgeContextObserver); assert.True(t, ok, "%T", m) {
			h.ObserveHedgeContext(ctx, observe.Hedge{Event: observe.HedgeWon})
		}
	}
	assert.Equal(t, []string{"a:" + observe.HedgeWon, "a:" + observe.HedgeWon, "a:" + observe.HedgeWon}, hedges)
}

type hooks struct {
	name   string
	models *[]string
}

func (h hooks) InjectHeaders(hd http.Header)   { hd.Add("X-Hook", h.name) }
func (h hooks) NoteResponseModel(model string) { *h.models = append(*h.models, h.name+":"+model) }

func TestAttemptHooks(t *testing.T) {
	hd := http.Header{}
	observe.InjectHeaders(context.Background(), hd) // no hooks: nothing
	assert.Empty(t, hd)
	observe.NoteResponseModel(context.Background(), "m")

	var models []string
	ctx := observe.WithAttemptHooks(context.Background(), hooks{"outer", &models})
	ctx = observe.WithAttemptHooks(ctx, hooks{"inner", &models})
	observe.InjectHeaders(ctx, hd)
	assert.Equal(t, []string{"inner", "outer"}, hd.Values("X-Hook"))
	observe.NoteResponseModel(ctx, "gpt-x")
	observe.NoteResponseModel(ctx, "") // nothing named: not reported
	assert.Equal(t, []string{"inner:gpt-x", "outer:gpt-x"}, models)
}
