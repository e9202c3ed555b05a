package otel_test

import (
	"testing"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/observe"
	pgwotel "github.com/pgw-go/pgw/observe/otel"
)

// New, with no options, returns an observe.Observer that pgw.WithObserver
// takes, like observe/prom's New.
var _ func(...pgwotel.Option) observe.Observer = pgwotel.New

func TestNewWithNoOptionsIsAnObserver(t *testing.T) {
	var obs observe.Observer = pgwotel.New()
	if obs == nil {
		t.Fatal("New() returned nil")
	}
	_ = pgw.WithObserver(obs)
}
