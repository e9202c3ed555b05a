package testutil

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ToolCall is a tool call the fake's answer asks for.
type ToolCall struct {
	// ID is the call's ID, as the answer names it.
	ID string
	// Name is the function the call asks for.
	Name      string
	Arguments string // JSON text, sent in two fragments when streamed
}

// halves splits s in two pieces (the second possibly empty), as upstreams
// split a tool call's arguments across chunks.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	return []string{s[:len(s)/2], s[len(s)/2:]}
}

// streamToolCalls writes, after the role chunk, an OpenAI answer that asks
// for reply.ToolCalls: the explicit Text first when set, then per call a
// chunk with its ID and name and chunks with its argument fragments, a
// "tool_calls" finish, the usage chunk when asked for, then [DONE].
func streamToolCalls(w http.ResponseWriter, req Request, reply Reply, usage Usage,
	event func(any), chunk func(delta map[string]any, finish any) map[string]any) {
	if reply.Text != "" {
		event(chunk(map[string]any{"content": reply.Text}, nil))
	}
	for i, tc := range reply.ToolCalls {
		if reply.Cut && i == reply.CutAfter {
			panic(http.ErrAbortHandler)
		}
		event(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, frag := range halves(tc.Arguments) {
			event(chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": frag},
			}}}, nil))
		}
	}
	if reply.Cut {
		panic(http.ErrAbortHandler)
	}
	event(chunk(map[string]any{}, "tool_calls"))
	if req.IncludeUsage {
		event(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage})
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// writeToolCompletion writes a non-streamed OpenAI answer that asks for
// reply.ToolCalls.
func writeToolCompletion(w http.ResponseWriter, model string, reply Reply, usage Usage) {
	calls := make([]any, len(reply.ToolCalls))
	for i, tc := range reply.ToolCalls {
		calls[i] = map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
	}
	var content any
	if reply.Text != "" {
		content = reply.Text
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "tool_calls": calls},
			"finish_reason": "tool_calls",
		}},
		"usage": usage,
	})
}

// Messages is the fake's Anthropic Messages endpoint, POST /v1/messages,
// on the same server: scripts, queues and counts are its own.
const Messages Endpoint = "messages"

// messagesBody is the part of a Messages request the fake reads.
type messagesBody struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicBlock is a content block of a request, as far as the fake reads
// it.
type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

// blockText is the text of a content value: a string, or the text blocks
// (and the texts inside tool results) of an array.
func blockText(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, b.Text)
		case "tool_result":
			out = append(out, blockText(b.Content)...)
		}
	}
	return out
}

// serveMessages answers like Anthropic's Messages API: an SSE stream of
// message_start, content blocks (text, then tool_use per scripted tool
// call, arguments in input_json_delta fragments), a ping, message_delta
// with the stop reason and usage, and message_stop; a whole message as JSON
// when "stream" is false; errors as {"type": "error", "error": {"type",
// "message"}}, 529 as overloaded_error. The x-api-key header is checked by
// RequireAPIKey like a Bearer token.
func (u *Upstream) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, ok := readPost(w, r)
	if !ok {
		return
	}
	var mb messagesBody
	if err := json.Unmarshal(body, &mb); err != nil || len(mb.Messages) == 0 || mb.MaxTokens <= 0 {
		writeAnthropicError(w, Reply{Status: http.StatusBadRequest, Message: "body must be a Messages request with messages and max_tokens"})
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		writeAnthropicError(w, Reply{Status: http.StatusBadRequest, Message: "anthropic-version header is required"})
		return
	}
	req := Request{Endpoint: Messages, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
		APIKey: r.Header.Get("X-Api-Key"), Body: body, Model: mb.Model, Stream: mb.Stream, Header: r.Header.Clone()}
	var prompt []string
	if len(mb.System) > 0 {
		prompt = append(prompt, blockText(mb.System)...)
	}
	for _, m := range mb.Messages {
		prompt = append(prompt, blockText(m.Content)...)
	}
	req.Prompt = strings.Join(prompt, "\n")
	reply := u.admit(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeAnthropicError(w, reply)
		return
	}
	text := reply.Text
	if text == "" && len(reply.ToolCalls) == 0 {
		text = DefaultAnswer
	}
	chunks := reply.Chunks
	if chunks == nil && text != "" {
		chunks = strings.SplitAfter(text, " ")
	}
	usage := Usage{PromptTokens: countWords(req.Prompt), CompletionTokens: len(chunks) + len(reply.ToolCalls)}
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	stop := "end_turn"
	if len(reply.ToolCalls) > 0 {
		stop = "tool_use"
	}
	ctx := r.Context()
	if !mb.Stream {
		if !u.wait(ctx, reply.FirstTokenDelay) {
			return
		}
		var content []any
		if text != "" {
			content = append(content, map[string]any{"type": "text", "text": strings.Join(chunks, "")})
		}
		for _, tc := range reply.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "model": mb.Model, "content": content,
			"stop_reason": stop, "usage": map[string]any{"input_tokens": usage.PromptTokens, "output_tokens": usage.CompletionTokens},
		})
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": mb.Model, "content": []any{},
		"stop_reason": nil, "usage": map[string]any{"input_tokens": usage.PromptTokens, "output_tokens": 1},
	}})
	event("ping", map[string]any{"type": "ping"})
	if !u.wait(ctx, reply.FirstTokenDelay) {
		return
	}
	index, sent := 0, 0
	if len(chunks) > 0 {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for i, piece := range chunks {
			if reply.Cut && sent == reply.CutAfter {
				panic(http.ErrAbortHandler)
			}
			if reply.BeforeChunk != nil {
				reply.BeforeChunk(ctx, i)
			}
			if ctx.Err() != nil {
				return
			}
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": piece}})
			sent++
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tc := range reply.ToolCalls {
		if reply.Cut && sent == reply.CutAfter {
			panic(http.ErrAbortHandler)
		}
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		for _, frag := range halves(tc.Arguments) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": frag}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
		sent++
	}
	if reply.Cut {
		panic(http.ErrAbortHandler)
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage.CompletionTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// writeAnthropicError writes reply as Anthropic's error object.
func writeAnthropicError(w http.ResponseWriter, reply Reply) {
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	msg := reply.Message
	typ := "invalid_request_error"
	switch {
	case reply.Status == 529:
		typ = "overloaded_error"
		if msg == "" {
			msg = "Overloaded"
		}
	case reply.Status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case reply.Status == http.StatusUnauthorized:
		typ = "authentication_error"
	case reply.Status == http.StatusForbidden:
		typ = "permission_error"
	case reply.Status >= 500:
		typ = "api_error"
	}
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	writeJSON(w, reply.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
