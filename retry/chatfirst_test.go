package retry_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// step is one Recv of a scripted stream: a chunk, or an error.
type step struct {
	ch  transport.ChatChunk
	err error
}

// scriptedChat answers each source with its steps, io.EOF after the last.
type scriptedChat struct {
	mu     sync.Mutex
	steps  map[string][]step
	opened []string
	closed int
	reject string // ValidateChat refuses this source
}

func (f *scriptedChat) ChatStream(_ context.Context, src transport.Source, _ transport.ChatRequest) (transport.ChatStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, src.Name)
	return &scriptedStream{f: f, steps: f.steps[src.Name]}, nil
}

func (f *scriptedChat) ValidateChat(src transport.Source, _ transport.ChatRequest) error {
	if src.Name == f.reject {
		return &transport.RequestError{Field: "Seed", Problem: "not supported", Source: src.Name, Provider: "anthropic"}
	}
	return nil
}

func (f *scriptedChat) openedSources() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.opened...)
}

type scriptedStream struct {
	f     *scriptedChat
	steps []step
	once  sync.Once
}

func (s *scriptedStream) Recv() (transport.ChatChunk, error) {
	if len(s.steps) == 0 {
		return transport.ChatChunk{}, io.EOF
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	return st.ch, st.err
}

func (s *scriptedStream) Close() error {
	s.once.Do(func() {
		s.f.mu.Lock()
		s.f.closed++
		s.f.mu.Unlock()
	})
	return nil
}

var errCut = errors.New("stream cut before its end")

func TestChatStreamRoleOnlyFirstEventDoesNotEndRetrying(t *testing.T) {
	e := newEnv(t)
	tr := &scriptedChat{steps: map[string][]step{
		"s1": {{ch: transport.ChatChunk{}}, {err: errCut}}, // a role-only event, then the cut
		"s2": {{ch: transport.ChatChunk{Delta: "hi"}}, {ch: transport.ChatChunk{FinishReason: "stop"}}},
	}}
	s, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err, "a cut after a role-only event is still before the first chunk: the call fails over")
	defer s.Close()
	assert.Equal(t, "s2", s.Source())
	assert.Equal(t, []string{"s1", "s2"}, tr.openedSources())
	ch, err := s.Recv()
	require.NoError(t, err)
	assert.Equal(t, "hi", ch.Delta, "the first chunk the caller sees carries content")
}

func TestChatStreamFirstToolCallPieceEndsRetrying(t *testing.T) {
	e := newEnv(t)
	tr := &scriptedChat{steps: map[string][]step{
		"s1": {{ch: transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{ID: "c1", Name: "f"}}}}, {err: errCut}},
	}}
	s, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	defer s.Close()
	ch, err := s.Recv()
	require.NoError(t, err)
	assert.Equal(t, "c1", ch.ToolCalls[0].ID)
	_, err = s.Recv()
	assert.ErrorIs(t, err, errCut, "after a delivered piece the cut reaches the caller: nothing is sent twice")
	assert.Equal(t, []string{"s1"}, tr.openedSources())
}

func TestChatCompleteRetriesAStreamCutHalfWay(t *testing.T) {
	e := newEnv(t)
	tr := &scriptedChat{steps: map[string][]step{
		"s1": {{ch: transport.ChatChunk{Delta: "half an "}}, {err: errCut}},
		"s2": {{ch: transport.ChatChunk{Delta: "whole "}}, {ch: transport.ChatChunk{Delta: "answer", FinishReason: "stop"}}},
	}}
	resp, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Complete(context.Background(), hiRequest())
	require.NoError(t, err)
	assert.Equal(t, "whole answer", resp.Content, "nothing of the cut attempt reaches the caller")
	assert.Equal(t, "s2", resp.Source)
	assert.Equal(t, []string{"s1", "s2"}, tr.openedSources())
	assert.Equal(t, 2, tr.closed, "both attempts' streams are closed")
	e.requireNothingHeld(t)
}

func TestChatCompleteAssemblesParallelToolCallsFromPieces(t *testing.T) {
	e := newEnv(t)
	usage := &transport.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CachedPromptTokens: 4}
	tr := &scriptedChat{steps: map[string][]step{
		"s1": {
			{ch: transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 0, ID: "call_a", Name: "weather"}}}},
			{ch: transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 1, ID: "call_b", Name: "time"}}}},
			{ch: transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 0, Arguments: `{"city":`}, {Index: 1, Arguments: `{"tz":"UTC"}`}}}},
			{ch: transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: 0, Arguments: `"Paris"}`}}}},
			{ch: transport.ChatChunk{FinishReason: "tool_calls", Usage: usage}},
		},
	}}
	resp, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Complete(context.Background(), hiRequest())
	require.NoError(t, err)
	assert.Equal(t, []transport.ToolCall{
		{ID: "call_a", Type: "function", Function: transport.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
		{ID: "call_b", Type: "function", Function: transport.FunctionCall{Name: "time", Arguments: `{"tz":"UTC"}`}},
	}, resp.ToolCalls)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, *usage, resp.Usage)
}

func TestChatEmptyAnswerIsDeliveredWhole(t *testing.T) {
	e := newEnv(t)
	tr := &scriptedChat{steps: map[string][]step{"s1": {{ch: transport.ChatChunk{FinishReason: "length"}}}}}
	s, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Stream(context.Background(), hiRequest())
	require.NoError(t, err)
	ch, err := s.Recv()
	require.NoError(t, err)
	assert.Equal(t, "length", ch.FinishReason)
	_, err = s.Recv()
	assert.Equal(t, io.EOF, err)
	e.requireNothingHeld(t)
}

func TestChatRequestASourceCannotCarryFailsBeforeAnyAttempt(t *testing.T) {
	e := newEnv(t)
	tr := &scriptedChat{reject: "s2"}
	_, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Complete(context.Background(), hiRequest())
	var re *transport.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "s2", re.Source)
	assert.Equal(t, "Seed", re.Field)
	assert.Empty(t, tr.openedSources(), "no attempt was made")
}

func TestChatIllegalRequestFailsBeforeAnyAttempt(t *testing.T) {
	e := newEnv(t)
	tr := &scriptedChat{}
	_, err := retry.NewChat(e.loop, tr, retry.ChatOptions{}).Stream(context.Background(), transport.ChatRequest{
		Messages: []transport.Message{{Role: "tool", Content: "42"}},
	})
	var re *transport.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Messages[0].ToolCallID", re.Field)
	assert.Empty(t, tr.openedSources())
}
