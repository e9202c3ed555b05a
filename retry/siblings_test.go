package retry_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// Slots someone else holds still refuse a split call under fail_fast: with
// every slot of the scope held outside the call, each part fails at once
// (quota_exhausted), none waits for a sibling that holds nothing.
func TestSplitCallFailsFastOnSlotsOthersHold(t *testing.T) {
	l := selfContendedLoop(t, 1, 1)
	ctx := context.Background()
	var outside []*admission.Ticket
	for range 2 {
		tk, _, err := l.Admission().Pick(ctx, nil, 0)
		require.NoError(t, err)
		require.NotNil(t, tk)
		outside = append(outside, tk)
	}
	tr := &fakeEmbed{}
	_, err := retry.NewEmbed(l, tr, 4).Embed(ctx, transport.EmbedRequest{Inputs: inputs(4)})
	requireEveryPartFailed(t, err, 4, errs.ReasonQuotaExhausted)
	assert.Empty(t, tr.batches, "nothing was sent")
	for _, tk := range outside {
		require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Success}))
	}
}

// panickyEmbed holds each batch until the test lets it go: with panic true
// it panics, else it answers.
type panickyEmbed struct {
	arrived chan string
	release map[string]chan bool
}

func (p *panickyEmbed) Embed(_ context.Context, _ transport.Source, req transport.EmbedRequest) (transport.EmbedResponse, error) {
	in := req.Inputs[0]
	p.arrived <- in
	if <-p.release[in] {
		panic("upstream client panicked on " + in)
	}
	return transport.EmbedResponse{Vectors: [][]float32{{1}}}, nil
}

// A part waiting for a sibling's slot is woken when that sibling panics:
// the panicking part gives its admission back as it unwinds, the waiting
// part is admitted on the freed slot, and the call re-raises the panic once
// every part has returned — nothing hangs, nothing stays held.
func TestSplitCallPartWaitingForASiblingIsWokenByItsPanic(t *testing.T) {
	var watching atomic.Bool
	refusedS2 := make(chan struct{}, 8)
	obs := observe.Funcs{Rejection: func(r observe.Rejection) {
		if watching.Load() && r.Source == "s2" && r.Limit == gate.LimitInFlight {
			select {
			case refusedS2 <- struct{}{}:
			default:
			}
		}
	}}
	l := observedSelfContendedLoop(t, obs, 1, 2) // three slots: three parts at once
	ctx := context.Background()
	// s1's slot is held outside the call: its third part, refused s1 and
	// s2 (both of s2's slots its siblings'), waits for a sibling.
	var outside *admission.Ticket
	for outside == nil || outside.Source != "s1" {
		tk, _, err := l.Admission().Pick(ctx, nil, 0)
		require.NoError(t, err)
		if outside != nil {
			require.NoError(t, outside.Done(ctx, admission.Result{Outcome: gate.Released}))
		}
		outside = tk
	}
	tr := &panickyEmbed{arrived: make(chan string, 3), release: map[string]chan bool{}}
	for _, in := range inputs(3) {
		tr.release[in] = make(chan bool, 1)
	}
	var recovered atomic.Value
	var callErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { recovered.Store(recover()) }()
		_, callErr = retry.NewEmbed(l, tr, 4).Embed(ctx, transport.EmbedRequest{Inputs: inputs(3)})
	}()
	watching.Store(true)
	first, second := <-tr.arrived, <-tr.arrived
	// The third part was refused s2's slots, which its siblings hold (and
	// s1's, held outside): it waits for a sibling rather than fail.
	select {
	case <-refusedS2:
	case <-done:
		t.Fatalf("the call returned with two parts held: %v, %v", recovered.Load(), callErr)
	}
	select {
	case third := <-tr.arrived:
		t.Fatalf("a third part (%s) ran with s2's two slots held by its siblings and s1's outside", third)
	default:
	}
	tr.release[first] <- true // panics: its slot comes back
	tr.release[second] <- false
	var third string
	select {
	case third = <-tr.arrived: // the waiting part, admitted on it
	case <-done:
		t.Fatalf("the call returned before its third part ran: %v, %v", recovered.Load(), callErr)
	}
	tr.release[third] <- false
	select {
	case <-done:
	case <-t.Context().Done():
		t.Fatal("the call did not return")
	}
	assert.Equal(t, "upstream client panicked on "+first, recovered.Load())
	require.NoError(t, outside.Done(ctx, admission.Result{Outcome: gate.Success}))
	// Every slot is free again: three admissions fit.
	for range 3 {
		tk, rej, err := l.Admission().Pick(ctx, nil, 0)
		require.NoError(t, err)
		require.NotNil(t, tk, "%v", rej)
		defer func() { require.NoError(t, tk.Done(ctx, admission.Result{Outcome: gate.Released})) }()
	}
}
