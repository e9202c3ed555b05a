package retry_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// item is what the fake streams carry: text, with flags the spec reads.
type item struct {
	text     string
	content  bool
	terminal bool
	fail     error
	usage    *transport.Usage
}

// itemPlan scripts one stream: an open error, or items then an end (nil
// for io.EOF).
type itemPlan struct {
	openErr error
	items   []item
	end     error
}

type fakeItems struct {
	mu     sync.Mutex
	plan   itemPlan
	next   int
	closed bool
}

func (f *fakeItems) Recv() (item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return item{}, errors.New("recv on a closed stream")
	}
	if f.next < len(f.plan.items) {
		f.next++
		return f.plan.items[f.next-1], nil
	}
	if f.plan.end != nil {
		return item{}, f.plan.end
	}
	return item{}, io.EOF
}

func (f *fakeItems) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeItems) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// itemSource serves plans per source, in order; an exhausted queue serves
// "a", "b" then io.EOF.
type itemSource struct {
	mu      sync.Mutex
	plans   map[string][]itemPlan
	opened  []string
	streams []*fakeItems
}

func (s *itemSource) spec() retry.StreamSpec[item] {
	return retry.StreamSpec[item]{
		Open: func(_ context.Context, src config.Source) (retry.Items[item], error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.opened = append(s.opened, src.Name)
			p := itemPlan{items: []item{{text: "a", content: true}, {text: "b", content: true}}}
			if q := s.plans[src.Name]; len(q) > 0 {
				p, s.plans[src.Name] = q[0], q[1:]
			}
			if p.openErr != nil {
				return nil, p.openErr
			}
			f := &fakeItems{plan: p}
			s.streams = append(s.streams, f)
			return f, nil
		},
		First:    func(it item) bool { return it.content },
		Terminal: func(it item) bool { return it.terminal },
		Failed:   func(it item) error { return it.fail },
		Usage: func(it item) (transport.Usage, bool) {
			if it.usage == nil {
				return transport.Usage{}, false
			}
			return *it.usage, true
		},
		EstTokens: 10,
	}
}

func (s *itemSource) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.opened...)
}

func drainItems(t *testing.T, s *retry.ItemStream[item]) (string, error) {
	t.Helper()
	var out string
	for range 100 {
		it, err := s.Recv()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out += it.text
	}
	t.Fatal("the stream did not end")
	return "", nil
}

func TestStreamFailsOverUntilTheFirstItem(t *testing.T) {
	e := newEnv(t)
	src := &itemSource{plans: map[string][]itemPlan{
		// A preamble item, then the connection drops: nothing reached the caller.
		"s1": {{items: []item{{text: "role:"}}, end: errBoom}},
	}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	assert.Equal(t, "s2", s.Source())
	assert.Equal(t, []string{"s1", "s2"}, src.seen())
	assert.Equal(t, gate.Open, e.snapshot(t, "s1").State, "the cut before the first item is s1's failure")
	text, err := drainItems(t, s)
	require.NoError(t, err)
	assert.Equal(t, "ab", text)
	require.NoError(t, s.Close())
	e.requireNothingHeld(t)
}

func TestStreamDeliversThePreambleBeforeTheFirstItem(t *testing.T) {
	e := newEnv(t, names("only"))
	src := &itemSource{plans: map[string][]itemPlan{
		"only": {{items: []item{{text: "<"}, {text: "ping"}, {text: "a", content: true}, {text: "b", content: true}}}},
	}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	text, err := drainItems(t, s)
	require.NoError(t, err)
	assert.Equal(t, "<pingab", text)
	require.NoError(t, s.Close())
}

func TestStreamErrorItemBeforeTheFirstItemFailsOver(t *testing.T) {
	e := newEnv(t)
	overloaded := httpErr(529, 0, "overloaded")
	src := &itemSource{plans: map[string][]itemPlan{"s1": {{items: []item{{text: "start"}, {text: "err", fail: overloaded}}}}}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	assert.Equal(t, "s2", s.Source())
	assert.True(t, src.streams[0].isClosed(), "the failed attempt's stream is closed")
	require.NoError(t, s.Close())
	e.requireNothingHeld(t)
}

func TestStreamHoldsItsAdmissionUntilItEnds(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown) // the stream is the probe
	usage := &transport.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	src := &itemSource{plans: map[string][]itemPlan{"only": {{items: []item{
		{text: "a", content: true}, {text: "b", content: true}, {usage: usage}}}}}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	require.True(t, s.Held())
	assert.Equal(t, 1, e.quota.InFlight("only"), "the permit is held while the stream runs")
	assert.Equal(t, 1, e.pacer.get(e.pacer.held, "only"))
	assert.Equal(t, 1, e.snapshot(t, "only").ProbesInFlight)

	text, err := drainItems(t, s)
	require.NoError(t, err)
	assert.Equal(t, "ab", text)
	assert.Equal(t, *usage, s.Usage())
	assert.Equal(t, gate.Closed, e.snapshot(t, "only").State, "io.EOF is the probe's success")
	e.requireNothingHeld(t, "only")
	require.NoError(t, s.Close())
}

func TestStreamCutAfterTheFirstItemIsAFailureNotRetried(t *testing.T) {
	e := newEnv(t)
	src := &itemSource{plans: map[string][]itemPlan{"s1": {{items: []item{{text: "a", content: true}}, end: errBoom}}}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	text, err := drainItems(t, s)
	require.ErrorIs(t, err, errBoom)
	assert.Equal(t, "a", text)
	assert.Equal(t, []string{"s1"}, src.seen(), "a cut after the first item is not retried")
	assert.Equal(t, gate.Open, e.snapshot(t, "s1").State, "the cut is a failure")
	require.NoError(t, s.Close())
	e.requireNothingHeld(t)
}

func TestStreamErrorItemAfterTheFirstIsDeliveredAndRecorded(t *testing.T) {
	e := newEnv(t, names("only"))
	src := &itemSource{plans: map[string][]itemPlan{"only": {{items: []item{
		{text: "a", content: true}, {text: "!", fail: httpErr(500, 0, "boom")}}}}}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	text, err := drainItems(t, s)
	require.NoError(t, err, "the error item reaches the caller, who reads it")
	assert.Equal(t, "a!", text)
	assert.Equal(t, gate.Open, e.snapshot(t, "only").State, "the error item is a failure")
	require.NoError(t, s.Close())
	e.requireNothingHeld(t, "only")
}

func TestStreamClosedEarlyIsReleased(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown)
	src := &itemSource{}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	_, err = s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.Equal(t, gate.HalfOpen, e.snapshot(t, "only").State, "an abandoned stream says nothing about the source")
	e.requireNothingHeld(t, "only")
	assert.True(t, src.streams[0].isClosed())
}

func TestStreamTerminalItemIsTheSuccessEvenIfClosedBeforeEOF(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown)
	src := &itemSource{plans: map[string][]itemPlan{"only": {{items: []item{
		{text: "a", content: true}, {text: "b", content: true}, {text: ".", terminal: true}}, end: errBoom}}}}
	s, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.NoError(t, err)
	require.True(t, s.Held(), "the terminal item is not read ahead")
	for _, want := range []string{"a", "b", "."} {
		it, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, want, it.text)
	}
	assert.False(t, s.Held())
	require.NoError(t, s.Close())
	assert.Equal(t, gate.Closed, e.snapshot(t, "only").State)
	e.requireNothingHeld(t, "only")
}

func TestStreamWholeWithinTheReadAheadHoldsNothing(t *testing.T) {
	e := newEnv(t, names("only"))
	ended := 0
	src := &itemSource{plans: map[string][]itemPlan{"only": {{items: []item{
		{text: "whole", content: true, terminal: true, usage: &transport.Usage{TotalTokens: 9}}}}}}}
	spec := src.spec()
	spec.OnEnd = func() { ended++ }
	s, err := retry.OpenStream(context.Background(), e.loop, spec)
	require.NoError(t, err)
	assert.False(t, s.Held())
	assert.Equal(t, 1, ended, "OnEnd runs before OpenStream returns")
	e.requireNothingHeld(t, "only")
	assert.True(t, src.streams[0].isClosed())
	text, err := drainItems(t, s)
	require.NoError(t, err)
	assert.Equal(t, "whole", text)
	require.NoError(t, s.Close())
	assert.Equal(t, 1, ended)
	assert.Equal(t, 9, s.Usage().TotalTokens)
}

func TestStreamCallerCancellationIsReleased(t *testing.T) {
	e := newEnv(t, names("only"))
	ctx, cancel := context.WithCancel(context.Background())
	src := &itemSource{plans: map[string][]itemPlan{"only": {{items: []item{{text: "a", content: true}}, end: context.Canceled}}}}
	s, err := retry.OpenStream(ctx, e.loop, src.spec())
	require.NoError(t, err)
	cancel()
	_, err = drainItems(t, s)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, gate.Closed, e.snapshot(t, "only").State, "a cancellation is no failure")
	e.requireNothingHeld(t, "only")
}

func TestStreamCallerErrorIsReturnedAtOnce(t *testing.T) {
	e := newEnv(t)
	src := &itemSource{plans: map[string][]itemPlan{"s1": {{openErr: httpErr(400, 0, "bad request")}}}}
	_, err := retry.OpenStream(context.Background(), e.loop, src.spec())
	require.Error(t, err)
	assert.Equal(t, []string{"s1"}, src.seen())
	e.requireNothingHeld(t)
}

func TestStreamOnEndRunsOnceAtTheEnd(t *testing.T) {
	e := newEnv(t, names("only"))
	ended := 0
	spec := (&itemSource{}).spec()
	spec.OnEnd = func() { ended++ }
	s, err := retry.OpenStream(context.Background(), e.loop, spec)
	require.NoError(t, err)
	assert.Zero(t, ended)
	_, err = drainItems(t, s)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, 1, ended)
}
