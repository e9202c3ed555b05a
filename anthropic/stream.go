package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"sync"
	"sync/atomic"

	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/internal/sse"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// ErrStreamCut is matched (errors.Is) by every *StreamCutError.
var ErrStreamCut = errors.New("anthropic: message stream cut before message_stop")

// StreamCutError reports a stream whose body ended or broke before
// message_stop: the answer is incomplete. It matches ErrStreamCut and
// io.ErrUnexpectedEOF with errors.Is and is an ordinary failure.
type StreamCutError struct {
	// Source is the name of the source whose stream was cut.
	Source string
	// Chunks is how many chunks Recv had returned before the cut.
	Chunks int
	// Err is the read error that ended the body, nil when it ended cleanly
	// but early.
	Err error
}

// Error implements the error interface.
func (e *StreamCutError) Error() string {
	msg := fmt.Sprintf("anthropic: source %q: message stream cut after %d chunks, before message_stop", e.Source, e.Chunks)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrStreamCut, io.ErrUnexpectedEOF and the read error.
func (e *StreamCutError) Unwrap() []error {
	out := []error{ErrStreamCut, io.ErrUnexpectedEOF}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Code returns "PGW-STREAM-CUT".
func (e *StreamCutError) Code() string { return "PGW-STREAM-CUT" }

// ChatStream opens a streamed Messages request on src (see the package doc
// for the mapping). It returns once the upstream has answered with its
// headers; chunks are then read by Recv as they arrive. The stream lives
// within ctx. The caller must Close it.
func (c *Client) ChatStream(ctx context.Context, src transport.Source, req transport.ChatRequest) (transport.ChatStream, error) {
	body, answer, err := buildBody(src, req)
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, src, body)
	if err != nil {
		return nil, err
	}
	s := &Stream{ctx: ctx, src: src, body: resp.Body, answer: answer, blocks: map[int]block{}}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// An upstream that answered with a whole message: serve it as the
		// events it stands for.
		defer resp.Body.Close()
		var m wireMessageOut
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("anthropic: source %q: decode message: %w", src.Name, err)
		}
		if provider.HasAnswerError(m.Error) {
			// {"type": "error", "error": {…}} with status 200: the failure
			// it reports, as the same error in a stream's error event.
			return nil, answerError(src, m.Error)
		}
		observe.NoteResponseModel(ctx, m.Model)
		s.whole = s.fromMessage(m)
		s.release(false)
		return s, nil
	}
	s.sse = sse.NewReader(resp.Body)
	return s, nil
}

// Stream is a Messages API answer read as ChatChunks. Recv is not safe for
// concurrent use; Close may be called from another goroutine to abort a
// blocked Recv.
type Stream struct {
	ctx    context.Context
	src    transport.Source
	body   io.ReadCloser
	sse    *sse.Reader
	answer string // the forced tool of a JSON answer, "" otherwise

	blocks     map[int]block // content blocks by the API's index
	tools      int           // tool_use blocks started so far
	usage      transport.Usage
	in, out    int // the usage's figures as reported
	cacheRead  int
	cacheWrite int
	delivered  int
	finished   bool // a stop reason was delivered
	unknown    atomic.Int64
	whole      []transport.ChatChunk // a non-streamed answer, served in order
	err        error                 // terminal result, returned again

	closed    atomic.Bool
	closeOnce sync.Once
}

// block is what the stream knows of one content block.
type block struct {
	kind string // "text", "tool_use", "answer" (the forced JSON tool), other
	tool int    // the tool call's Index, for tool_use
	args bool   // a non-empty fragment of the tool's input arrived
}

var _ transport.EventCounter = (*Stream)(nil)

// UnknownEvents returns how many events of a type the transport does not
// know the stream has skipped.
func (s *Stream) UnknownEvents() int { return int(s.unknown.Load()) }

type wireEvent struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock *struct {
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Message *struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// wireUsage is the API's usage object. input_tokens excludes the cached
// parts, which are counted apart.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// merge takes the figures u reports (message_delta repeats or updates
// those of message_start) into the stream's usage: every input token, cached
// or not, is a prompt token.
func (s *Stream) merge(u *wireUsage) {
	if u == nil {
		return
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&s.in, u.InputTokens)
	set(&s.cacheWrite, u.CacheCreationInputTokens)
	set(&s.cacheRead, u.CacheReadInputTokens)
	set(&s.out, u.OutputTokens)
	prompt := s.in + s.cacheWrite + s.cacheRead
	s.usage = transport.Usage{
		PromptTokens:       prompt,
		CompletionTokens:   s.out,
		TotalTokens:        prompt + s.out,
		CachedPromptTokens: s.cacheRead,
	}
}

// finishReason maps the API's stop reason onto OpenAI's finish reasons.
func (s *Stream) finishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens":
		return "length"
	case "tool_use":
		if s.answer != "" {
			return "stop" // the forced tool of a JSON answer is the answer
		}
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return stop
}

// Recv returns the next chunk that carries text, tool-call pieces, a finish
// reason or usage. It returns io.EOF after message_stop, ctx.Err() when the
// stream's ctx ended, *StreamCutError when the body ended or broke before
// message_stop and before the stop reason, and *transport.HTTPError for an error
// event.
func (s *Stream) Recv() (transport.ChatChunk, error) {
	if s.err != nil {
		return transport.ChatChunk{}, s.err
	}
	if s.whole != nil {
		if len(s.whole) == 0 {
			s.err = io.EOF
			return transport.ChatChunk{}, io.EOF
		}
		ch := s.whole[0]
		s.whole = s.whole[1:]
		return ch, nil
	}
	for {
		if s.closed.Load() {
			return transport.ChatChunk{}, s.fail(errStreamClosed)
		}
		data, err := s.sse.Next()
		if err != nil {
			return transport.ChatChunk{}, s.fail(s.readError(err))
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		var ev wireEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return transport.ChatChunk{}, s.fail(fmt.Errorf("anthropic: source %q: decode event after chunk %d: %w", s.src.Name, s.delivered, err))
		}
		ch, done, err := s.event(ev, data)
		if err != nil {
			return transport.ChatChunk{}, s.fail(err)
		}
		if done {
			return transport.ChatChunk{}, s.fail(io.EOF)
		}
		if !ch.HasContent() && ch.FinishReason == "" && ch.Usage == nil {
			continue
		}
		s.delivered++
		return ch, nil
	}
}

// event turns one event into the chunk it amounts to (possibly empty);
// done at message_stop.
func (s *Stream) event(ev wireEvent, raw []byte) (ch transport.ChatChunk, done bool, err error) {
	switch ev.Type {
	case "ping":
	case "message_start":
		if ev.Message != nil {
			observe.NoteResponseModel(s.ctx, ev.Message.Model)
			s.merge(ev.Message.Usage)
		}
	case "content_block_start":
		if ev.ContentBlock == nil {
			break
		}
		b := block{kind: ev.ContentBlock.Type}
		switch {
		case b.kind == "tool_use" && s.answer != "" && ev.ContentBlock.Name == s.answer:
			b.kind = "answer"
		case b.kind == "tool_use":
			b.tool = s.tools
			s.tools++
			ch.ToolCalls = []transport.ToolCallDelta{{Index: b.tool, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}}
		case b.kind == "text":
			ch.Delta = ev.ContentBlock.Text
		}
		s.blocks[ev.Index] = b
	case "content_block_delta":
		if ev.Delta == nil {
			break
		}
		b := s.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			ch.Delta = ev.Delta.Text
		case "input_json_delta":
			if ev.Delta.PartialJSON != "" && !b.args {
				b.args = true
				s.blocks[ev.Index] = b
			}
			switch b.kind {
			case "answer":
				ch.Delta = ev.Delta.PartialJSON
			case "tool_use":
				ch.ToolCalls = []transport.ToolCallDelta{{Index: b.tool, Arguments: ev.Delta.PartialJSON}}
			}
		default:
			// thinking_delta, signature_delta, citations_delta: not part
			// of the chat model.
			s.unknown.Add(1)
		}
	case "content_block_stop":
		// A tool called without arguments streams no fragment (or an
		// empty one): its input is the empty object it started with.
		if b := s.blocks[ev.Index]; !b.args {
			switch b.kind {
			case "answer":
				ch.Delta = "{}"
			case "tool_use":
				ch.ToolCalls = []transport.ToolCallDelta{{Index: b.tool, Arguments: "{}"}}
			}
		}
	case "message_delta":
		s.merge(ev.Usage)
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			ch.FinishReason = s.finishReason(ev.Delta.StopReason)
			u := s.usage
			ch.Usage = &u
			s.finished = true
		}
	case "message_stop":
		return ch, true, nil
	case "error":
		field := ev.Error
		if !provider.HasAnswerError(field) {
			field = raw // an error event without its "error" object
		}
		return ch, false, answerError(s.src, field)
	default:
		s.unknown.Add(1)
	}
	return ch, false, nil
}

// answerError turns the error of an error event, or of an error object
// in a 200 answer, into the HTTPError of the status its type stands for
// (provider.ErrorBody.Status, the table the http client classes it by),
// marked as a spent quota when its type says so (errs.SpentQuota).
func answerError(src transport.Source, field json.RawMessage) error {
	e := provider.ParseAnswerError(src, field)
	msg := e.Text()
	if msg == "" {
		msg = "an error without a message or type"
	}
	he := &errs.HTTPError{StatusCode: e.Status(), Message: msg}
	if e.InsufficientQuota() {
		return errs.SpentQuota(he)
	}
	return he
}

// errStreamClosed is returned by Recv after Close.
var errStreamClosed = errors.New("anthropic: message stream closed")

// readError classifies a failed read of the body.
func (s *Stream) readError(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if s.closed.Load() {
		return errStreamClosed
	}
	if errors.Is(err, sse.ErrLineTooLong) {
		return fmt.Errorf("anthropic: source %q: %w", s.src.Name, err)
	}
	if errors.Is(err, io.EOF) {
		if s.finished {
			// The stop reason and usage arrived; only message_stop is
			// missing: the answer is whole.
			return io.EOF
		}
		err = nil
	}
	return &StreamCutError{Source: s.src.Name, Chunks: s.delivered, Err: err}
}

// fail records the terminal result and lets the connection go.
func (s *Stream) fail(err error) error {
	s.err = err
	s.release(errors.Is(err, io.EOF))
	return err
}

// Close releases the stream's connection; safe to call more than once and
// concurrently with Recv.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.release(false)
	return nil
}

func (s *Stream) release(drain bool) {
	s.closeOnce.Do(func() {
		if drain {
			_, _ = io.CopyN(io.Discard, s.body, 4<<10)
		}
		_ = s.body.Close()
	})
}

// wireMessageOut is a whole (non-streamed) message.
type wireMessageOut struct {
	Error   json.RawMessage `json:"error"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	Model      string     `json:"model"`
	StopReason string     `json:"stop_reason"`
	Usage      *wireUsage `json:"usage"`
}

// fromMessage is a whole message as the chunks its stream would give.
func (s *Stream) fromMessage(m wireMessageOut) []transport.ChatChunk {
	var out []transport.ChatChunk
	for _, b := range m.Content {
		switch {
		case b.Type == "text":
			out = append(out, transport.ChatChunk{Delta: b.Text})
		case b.Type == "tool_use" && s.answer != "" && b.Name == s.answer:
			out = append(out, transport.ChatChunk{Delta: string(b.Input)})
		case b.Type == "tool_use":
			out = append(out, transport.ChatChunk{ToolCalls: []transport.ToolCallDelta{{Index: s.tools, ID: b.ID, Name: b.Name, Arguments: string(b.Input)}}})
			s.tools++
		}
	}
	s.merge(m.Usage)
	u := s.usage
	out = append(out, transport.ChatChunk{FinishReason: s.finishReason(m.StopReason), Usage: &u})
	return out
}
