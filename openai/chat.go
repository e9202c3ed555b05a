package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/pgw-go/pgw/internal/sse"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// chatPath is appended to Source.BaseURL (which includes /v1).
const chatPath = "/chat/completions"

// wireChunk is one "chat.completion.chunk" event. An upstream may also send
// {"error": {...}} as an event when it fails mid-stream.
type wireChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   deltaContent    `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []wireToolDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
	Model string          `json:"model"`
}

// wireToolDelta is a piece of one tool call in a chunk. Index is absent on
// some OpenAI-compatible servers (toolIndex).
type wireToolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireCompletion is a non-streamed "chat.completion". Content is raw: a
// string on OpenAI, an array of text parts on some compatible servers.
type wireCompletion struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []wireToolCall  `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
	Model string          `json:"model"`
}

// ChatStream opens a streamed chat completion on src: POST
// {BaseURL}/chat/completions with "stream": true and
// "stream_options": {"include_usage": true} (not to Mistral's own API, a
// host under mistral.ai, which refuses the key with a 422 and reports usage
// unasked, takes req.Seed as random_seed, and gets other providers'
// tool-call IDs as the nine letters and digits it takes). It returns once the upstream
// has answered with its headers; chunks are then read by Recv as they
// arrive. req.Model, when empty, is src.Model. The stream lives within ctx:
// cancelling ctx ends it, and Recv then returns ctx.Err(). The caller must
// Close the stream. An upstream that ignores "stream" and answers with one
// JSON completion is served as a stream of one chunk.
func (c *Client) ChatStream(ctx context.Context, src transport.Source, req transport.ChatRequest) (transport.ChatStream, error) {
	body, err := chatBody(src, req)
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, src, chatPath, json.RawMessage(body), true)
	if err != nil {
		return nil, err
	}
	if isJSON(resp) {
		var wc wireCompletion
		if err := decodeJSON(ctx, src, "chat", resp, &wc); err != nil {
			return nil, err
		}
		observe.NoteResponseModel(ctx, wc.Model)
		chunk, err := wc.chunk(src)
		if err != nil {
			return nil, err
		}
		return &oneChunkStream{chunk: chunk}, nil
	}
	return &chatStream{ctx: ctx, src: src, body: resp.Body, sse: sse.NewReader(resp.Body)}, nil
}

// isJSON reports whether resp carries a JSON document rather than an event
// stream.
func isJSON(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// chunk turns a whole completion into the single chunk it amounts to.
func (wc *wireCompletion) chunk(src transport.Source) (transport.ChatChunk, error) {
	if provider.HasAnswerError(wc.Error) {
		return transport.ChatChunk{}, upstreamError(src, wc.Error)
	}
	if len(wc.Choices) == 0 {
		return transport.ChatChunk{}, fmt.Errorf("openai: source %q: chat completion has no choices", src.Name)
	}
	choice := wc.Choices[0]
	text, err := contentText(choice.Message.Content)
	if err != nil {
		return transport.ChatChunk{}, fmt.Errorf("openai: source %q: chat completion content: %w", src.Name, err)
	}
	chunk := transport.ChatChunk{Delta: text}
	if choice.Message.Refusal != nil {
		chunk.Refusal = *choice.Message.Refusal
	}
	for i, tc := range choice.Message.ToolCalls {
		chunk.ToolCalls = append(chunk.ToolCalls, transport.ToolCallDelta{
			Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
		})
	}
	if choice.FinishReason != nil {
		chunk.FinishReason = *choice.FinishReason
	}
	if wc.Usage != nil {
		u := wc.Usage.usage()
		chunk.Usage = &u
	}
	return chunk, nil
}

// contentText reads a message content that is a string, null, or an array
// of parts of which the "text" ones are concatenated.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content is neither a string nor an array of parts")
	}
	var b bytes.Buffer
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// deltaContent is a chunk's delta.content: a string on OpenAI, or an array
// of parts on some compatible servers (Mistral's text, thinking and
// reference chunks), read as contentText reads a whole message's content.
type deltaContent string

// UnmarshalJSON reads a string, null or an array of parts. A string without
// escapes (most deltas) is taken as is, without decoding it a second time.
func (c *deltaContent) UnmarshalJSON(raw []byte) error {
	if n := len(raw); n >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		*c = deltaContent(raw[1 : n-1])
		return nil
	}
	s, err := contentText(raw)
	if err != nil {
		return err
	}
	*c = deltaContent(s)
	return nil
}

// errStreamClosed is returned by Recv after Close.
var errStreamClosed = errors.New("openai: chat stream closed")

// chatStream reads chunks off an SSE body. Recv is not safe for concurrent
// use; Close may be called from another goroutine to abort a blocked Recv.
type chatStream struct {
	ctx  context.Context
	src  transport.Source
	body io.ReadCloser
	sse  *sse.Reader

	delivered int   // chunks returned by Recv
	finished  bool  // a finish_reason was delivered
	err       error // terminal result, returned again by every later Recv
	tools     tools // the tool calls seen so far, for pieces with no index

	closed    atomic.Bool
	closeOnce sync.Once
}

// Recv returns the next chunk that carries text, a refusal, tool-call
// pieces, a finish reason or usage (role-only and empty chunks are skipped,
// so the first chunk a caller sees is the first token). It returns io.EOF after "data: [DONE]", ctx.Err()
// when the stream's ctx ended, *StreamCutError when the body ended or broke
// before its end, and *UpstreamError when the upstream sent an error event.
func (s *chatStream) Recv() (transport.ChatChunk, error) {
	if s.err != nil {
		return transport.ChatChunk{}, s.err
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
		if string(data) == "[DONE]" {
			return transport.ChatChunk{}, s.fail(io.EOF)
		}
		if len(data) == 0 {
			continue
		}
		var wc wireChunk
		if err := json.Unmarshal(data, &wc); err != nil {
			return transport.ChatChunk{}, s.fail(fmt.Errorf("openai: source %q: decode chat chunk %d: %w", s.src.Name, s.delivered+1, err))
		}
		if s.delivered == 0 {
			observe.NoteResponseModel(s.ctx, wc.Model)
		}
		if provider.HasAnswerError(wc.Error) {
			return transport.ChatChunk{}, s.fail(upstreamError(s.src, wc.Error))
		}
		var chunk transport.ChatChunk
		for _, ch := range wc.Choices {
			if ch.Index != 0 {
				continue // pgw asks for one choice; ignore extras
			}
			chunk.Delta = string(ch.Delta.Content)
			chunk.Refusal = ch.Delta.Refusal
			for _, d := range ch.Delta.ToolCalls {
				chunk.ToolCalls = append(chunk.ToolCalls, transport.ToolCallDelta{
					Index: s.tools.index(d), ID: d.ID, Name: d.Function.Name, Arguments: d.Function.Arguments,
				})
			}
			if ch.FinishReason != nil {
				chunk.FinishReason = *ch.FinishReason
			}
		}
		if wc.Usage != nil {
			u := wc.Usage.usage()
			chunk.Usage = &u
		}
		if !chunk.HasContent() && chunk.FinishReason == "" && chunk.Usage == nil {
			continue
		}
		s.delivered++
		if chunk.FinishReason != "" {
			s.finished = true
		}
		return chunk, nil
	}
}

// tools numbers a stream's tool calls. OpenAI gives each piece of a tool
// call the index of its call; some compatible servers send no index at all,
// and then a piece with an ID not seen last starts the next call while a
// piece without one continues the last call.
type tools struct {
	n      int    // calls seen: the next new call's index
	last   int    // the index of the call the last piece belonged to
	lastID string // that call's ID
}

// index returns the index of d's call.
func (t *tools) index(d wireToolDelta) int {
	i := t.last
	switch {
	case d.Index != nil:
		i = *d.Index
	case t.n == 0 || (d.ID != "" && d.ID != t.lastID):
		i = t.n
	}
	if i != t.last || d.ID != "" {
		t.lastID = d.ID
	}
	t.last, t.n = i, max(t.n, i+1)
	return i
}

// readError classifies a failed read of the body.
func (s *chatStream) readError(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if s.closed.Load() {
		return errStreamClosed
	}
	if errors.Is(err, sse.ErrLineTooLong) {
		return fmt.Errorf("openai: source %q: %w", s.src.Name, err)
	}
	if errors.Is(err, io.EOF) {
		if s.finished {
			// The answer is complete; only [DONE] (and maybe usage) is
			// missing, as with some compatible servers.
			return io.EOF
		}
		err = nil
	}
	return &StreamCutError{Source: s.src.Name, Chunks: s.delivered, Err: err}
}

// fail records the terminal result and lets the connection go.
func (s *chatStream) fail(err error) error {
	s.err = err
	s.release(errors.Is(err, io.EOF))
	return err
}

// Close releases the stream's connection; safe to call more than once and
// concurrently with Recv.
func (s *chatStream) Close() error {
	s.closed.Store(true)
	s.release(false)
	return nil
}

// release closes the body once. A finished body is drained first (a few
// bytes at most) so that the connection is reused; an unfinished one is
// simply dropped.
func (s *chatStream) release(drain bool) {
	s.closeOnce.Do(func() {
		if drain {
			_, _ = io.CopyN(io.Discard, s.body, 4<<10)
		}
		_ = s.body.Close()
	})
}

// oneChunkStream serves a non-streamed completion through ChatStream.
type oneChunkStream struct {
	chunk transport.ChatChunk
	done  bool
}

func (s *oneChunkStream) Recv() (transport.ChatChunk, error) {
	if s.done {
		return transport.ChatChunk{}, io.EOF
	}
	s.done = true
	return s.chunk, nil
}

func (s *oneChunkStream) Close() error { return nil }
