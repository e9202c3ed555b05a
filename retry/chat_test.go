package retry_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// chatPlan is how one attempt on a source answers.
type chatPlan struct {
	openErr error
	chunks  []string
	usage   *transport.Usage // on the last chunk
	endErr  error            // after the chunks; nil means io.EOF
	// stall: the first Recv waits for its ctx (a source that never sends),
	// after calling onStall.
	stall bool
}

type fakeChat struct {
	mu      sync.Mutex
	plans   map[string][]chatPlan
	opened  []string
	onStall func()
	streams []*fakeStream
}

func (f *fakeChat) ChatStream(ctx context.Context, src transport.Source, _ transport.ChatRequest) (transport.ChatStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, src.Name)
	var p chatPlan
	if q := f.plans[src.Name]; len(q) > 0 {
		p, f.plans[src.Name] = q[0], q[1:]
	} else {
		p = chatPlan{chunks: []string{"hello ", "from " + src.Name}}
	}
	if p.openErr != nil {
		return nil, p.openErr
	}
	s := &fakeStream{ctx: ctx, plan: p, onStall: f.onStall}
	f.streams = append(f.streams, s)
	return s, nil
}

func (f *fakeChat) openedSources() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.opened...)
}

type fakeStream struct {
	ctx     context.Context
	plan    chatPlan
	next    int
	onStall func()
	mu      sync.Mutex
	closed  bool
}

func (s *fakeStream) Recv() (transport.ChatChunk, error) {
	if s.plan.stall && s.next == 0 {
		if s.onStall != nil {
			s.onStall()
		}
		<-s.ctx.Done()
		return transport.ChatChunk{}, s.ctx.Err()
	}
	if err := s.ctx.Err(); err != nil {
		return transport.ChatChunk{}, err
	}
	if s.next < len(s.plan.chunks) {
		ch := transport.ChatChunk{Delta: s.plan.chunks[s.next]}
		s.next++
		if s.next == len(s.plan.chunks) {
			ch.FinishReason = "stop"
			ch.Usage = s.plan.usage
		}
		return ch, nil
	}
	if s.plan.endErr != nil {
		return transport.ChatChunk{}, s.plan.endErr
	}
	return transport.ChatChunk{}, io.EOF
}

func (s *fakeStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *fakeStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func newChat(e *env, tr transport.ChatTransport, opt retry.ChatOptions) *retry.Chat {
	return retry.NewChat(e.loop, tr, opt)
}

func readAll(t *testing.T, s transport.ChatStream) (string, error) {
	t.Helper()
	var out string
	for {
		ch, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out += ch.Delta
	}
}

func TestChatRetriesOnlyBeforeTheFirstChunk(t *testing.T) {
	e := newEnv(t)
	tr := &fakeChat{plans: map[string][]chatPlan{"s1": {{openErr: httpErr(503, 0, "overloaded")}}}}
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "s2", s.Source())
	text, err := readAll(t, s)
	require.NoError(t, err)
	assert.Equal(t, "hello from s2", text)
	assert.Equal(t, []string{"s1", "s2"}, tr.openedSources())
}

func TestChatFailureAfterTheFirstChunkIsNotRetried(t *testing.T) {
	e := newEnv(t)
	cut := errors.New("stream cut mid-answer")
	tr := &fakeChat{plans: map[string][]chatPlan{"s1": {{chunks: []string{"partial"}, endErr: cut}}}}
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	text, err := readAll(t, s)
	require.ErrorIs(t, err, cut, "the caller already has chunks: the failure is returned, not retried")
	assert.Equal(t, "partial", text)
	assert.Equal(t, []string{"s1"}, tr.openedSources())
	assert.Equal(t, gate.Open, e.snapshot(t, "s1").State, "recorded as the source's failure")
	e.requireNothingHeld(t)
	require.NoError(t, s.Close())
}

func TestChatFirstTokenTimeoutFailsOver(t *testing.T) {
	e := newEnv(t)
	var fire func()
	tr := &fakeChat{plans: map[string][]chatPlan{"s1": {{stall: true}}}}
	tr.onStall = func() { fire() } // the first-token timer goes off while s1 says nothing
	opt := retry.ChatOptions{
		FirstTokenTimeout: 5 * time.Second,
		AfterFunc: func(d time.Duration, f func()) func() bool {
			assert.Equal(t, 5*time.Second, d)
			fire = f
			return func() bool { return true }
		},
	}
	s, err := newChat(e, tr, opt).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "s2", s.Source())
	assert.Equal(t, gate.Open, e.snapshot(t, "s1").State, "a first-token timeout is a failure")
	assert.True(t, tr.streams[0].isClosed(), "the silent stream was closed")
}

func TestChatTotalTimeoutIsTheSourceTimeout(t *testing.T) {
	e := newEnv(t)
	var deadline time.Time
	tr := chatFunc(func(ctx context.Context, src transport.Source) (transport.ChatStream, error) {
		deadline, _ = ctx.Deadline()
		return &fakeStream{ctx: ctx, plan: chatPlan{chunks: []string{"x"}}}, nil
	})
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	defer s.Close()
	assert.InDelta(t, float64(10*time.Second), float64(time.Until(deadline)), float64(time.Second),
		"the stream's ctx carries the source's Timeout for the whole answer")
}

type chatFunc func(ctx context.Context, src transport.Source) (transport.ChatStream, error)

func (f chatFunc) ChatStream(ctx context.Context, src transport.Source, _ transport.ChatRequest) (transport.ChatStream, error) {
	return f(ctx, src)
}

func TestChatDemotesASourceThatFailedInThisCall(t *testing.T) {
	// s1 is preferred (priority 0) and its breaker never opens (Noop): only
	// in-call demotion sends the second attempt to s2.
	e := newEnv(t, withScope(func(s *config.ScopeSettings) {
		s.Sources = []config.Source{{Name: "s1"}, {Name: "s2", Priority: 1}}
	}), func(c *retry.Config) { c.Breaker = gate.Noop{} })
	tr := &fakeChat{plans: map[string][]chatPlan{"s1": {{openErr: httpErr(500, 0, "boom")}}}}
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []string{"s1", "s2"}, tr.openedSources())
}

func TestChatThrottleShrinksThePacerAndHoldsTheSourceOff(t *testing.T) {
	e := newEnv(t)
	tr := &fakeChat{plans: map[string][]chatPlan{"s1": {{openErr: httpErr(429, 30*time.Second, "rate limited")}}}}
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	assert.Equal(t, "s2", s.Source())
	assert.Equal(t, 1, e.pacer.get(e.pacer.throttled, "s1"))
	assert.Equal(t, 30*time.Second, e.loop.Admission().Memo().Remaining("s1", e.clk.Now()))
	require.NoError(t, s.Close())
	e.requireNothingHeld(t)
}

func TestChatStreamHoldsItsAdmissionUntilItEnds(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown) // the stream is the probe
	usage := &transport.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	tr := &fakeChat{plans: map[string][]chatPlan{"only": {{chunks: []string{"a", "b"}, usage: usage}}}}
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), transport.ChatRequest{Messages: hiRequest().Messages, EstTokens: 50})
	require.NoError(t, err)
	assert.Equal(t, 1, e.quota.InFlight("only"), "the permit is held while the answer streams")
	assert.Equal(t, 1, e.pacer.get(e.pacer.held, "only"))
	assert.Equal(t, 1, e.snapshot(t, "only").ProbesInFlight)

	text, err := readAll(t, s)
	require.NoError(t, err)
	assert.Equal(t, "ab", text)
	assert.Equal(t, *usage, s.Usage())
	assert.Equal(t, gate.Closed, e.snapshot(t, "only").State, "io.EOF is the probe's success")
	e.requireNothingHeld(t, "only")
	require.NoError(t, s.Close())
}

func TestChatStreamClosedEarlyIsReleased(t *testing.T) {
	e := newEnv(t, names("only"))
	e.open(t, "only")
	e.clk.Advance(cooldown)
	tr := &fakeChat{plans: map[string][]chatPlan{"only": {{chunks: []string{"a", "b", "c"}}}}}
	s, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	_, err = s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	snap := e.snapshot(t, "only")
	assert.Equal(t, gate.HalfOpen, snap.State, "an abandoned answer says nothing about the source")
	e.requireNothingHeld(t, "only")
	assert.True(t, tr.streams[0].isClosed())
}

func TestChatCompleteCollectsTheAnswer(t *testing.T) {
	e := newEnv(t)
	tr := &fakeChat{}
	resp, err := newChat(e, tr, retry.ChatOptions{}).Complete(context.Background(), hiRequest())
	require.NoError(t, err)
	assert.Equal(t, "hello from s1", resp.Content)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, "s1", resp.Source)
	e.requireNothingHeld(t)
}

func TestChatCallerErrorIsReturnedAtOnce(t *testing.T) {
	e := newEnv(t)
	tr := &fakeChat{plans: map[string][]chatPlan{"s1": {{openErr: httpErr(400, 0, "context length exceeded")}}}}
	_, err := newChat(e, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	var he *errs.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 400, he.StatusCode)
	assert.Equal(t, []string{"s1"}, tr.openedSources())
	e.requireNothingHeld(t)
}
