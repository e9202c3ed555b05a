package observe_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/observe"
)

// switchable is an observer that can say it is off.
type switchable struct {
	observe.Nop
	on bool
}

func (s switchable) Enabled() bool { return s.on }

func TestEnabled(t *testing.T) {
	off, on := switchable{on: false}, switchable{on: true}
	cases := []struct {
		name string
		o    observe.Observer
		want bool
	}{
		{"nil", nil, false},
		{"an observer without Enabled", observe.Funcs{}, true},
		{"an EnabledObserver that is off", off, false},
		{"an EnabledObserver that is on", on, true},
		{"Multi of one that is off", observe.Multi(off), false},
		{"Multi of one off and one without Enabled", observe.Multi(off, observe.Funcs{}), true},
		{"Multi of off and on", observe.Multi(off, on), true},
		{"Multi of nothing", observe.Multi(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, observe.Enabled(c.o))
		})
	}
}
