package admission

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/pgw-go/pgw/observe"
)

// Init forgets everything of a previous call, however it ended: a Call that
// waited and failed is, after Init, what a fresh one is. The field count
// makes a new field of Call fail here until clean knows it.
func TestCallInitForgetsThePreviousCall(t *testing.T) {
	if n := reflect.TypeFor[Call]().NumField(); n != 16 {
		t.Fatalf("Call has %d fields; Call.clean, Call.Init and this test know 16", n)
	}
	a, b := &SourceAdmission{scope: "A"}, &SourceAdmission{scope: "B"}
	type ctxKey struct{}
	dirty := func() *Call {
		return &Call{
			a: a, stall: nil, fails: map[string]int{"s": 1}, waiting: true,
			since: time.Unix(1, 0), naps: 3, kind: "quota_full", hint: time.Second,
			reasons: map[string]string{"s": "rate_limited"},
			wctx:    context.WithValue(context.Background(), ctxKey{}, 1),
			sib:     new(Siblings), sibMark: 2, slotsFull: true,
			obs: observe.Nop{}, tr: observe.Multi().(observe.ContextObserver), own: true,
		}
	}
	want := Call{a: b}
	for i := range 15 {
		c := dirty()
		// Each field dirty alone, then all of them.
		if i < 14 {
			fresh := Call{a: a}
			v, f := reflect.ValueOf(c).Elem(), reflect.ValueOf(&fresh).Elem()
			for j := 2; j < v.NumField(); j++ {
				if j-2 != i {
					setField(v.Field(j), f.Field(j))
				}
			}
		}
		c.Init(b, nil)
		if !reflect.DeepEqual(*c, want) {
			t.Errorf("case %d: after Init: %+v, want %+v", i, *c, want)
		}
	}
}

// setField sets dst, an unexported field, to src's value.
func setField(dst, src reflect.Value) {
	reflect.NewAt(dst.Type(), dst.Addr().UnsafePointer()).Elem().Set(
		reflect.NewAt(src.Type(), src.Addr().UnsafePointer()).Elem())
}
