// Package fake is an in-process fake of the two upstream APIs the SDK
// examples speak: OpenAI's chat completions (POST /v1/chat/completions) and
// Anthropic's messages (POST /v1/messages), each as a JSON answer or as a
// server-sent event stream, with scripted failures. It stands in for the
// providers in the examples' tests and when an example runs without
// configuration; it listens on loopback only.
package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Reply scripts the answer to one request. The zero Reply is a success with
// the default answer.
type Reply struct {
	// Status, when neither 0 nor 200, makes the reply an error in the
	// provider's format with this status.
	Status int
	// RetryAfter is sent verbatim as the Retry-After header.
	RetryAfter string
	// Code is the error's code (OpenAI) or type (Anthropic).
	Code string
	// Text is the answer (default "Hello from the fake.").
	Text string
	// Tool, when set, makes the answer a call of this tool with these
	// JSON arguments. A request that offers tools gets a call of the first
	// with {"city":"Paris"} unless the reply names one.
	Tool, Arguments string
	// CutAfter > 0 drops the connection of a streamed answer after that
	// many content events: a stream cut mid-answer.
	CutAfter int
}

// DefaultText is the answer of a zero Reply.
const DefaultText = "Hello from the fake."

// Request is what the fake recorded of one request.
type Request struct {
	// Path is the request's URL path.
	Path string
	Key  string // the credential: Bearer token or x-api-key
	// Model is the body's "model".
	Model string
	// Stream is the body's "stream".
	Stream bool
	// Body is the JSON body, decoded.
	Body map[string]any
}

// Upstream is one fake provider. Safe for concurrent use.
type Upstream struct {
	// URL is the server's root URL. An OpenAI source's BASE_URL is
	// URL + "/v1"; an Anthropic source's is URL.
	URL string

	srv   *httptest.Server
	mu    sync.Mutex
	queue []Reply
	reqs  []Request
	key   string
}

// Start starts a fake; Close stops it.
func Start() *Upstream {
	u := &Upstream{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { u.serve(w, r, false) })
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { u.serve(w, r, true) })
	u.srv = httptest.NewServer(mux)
	u.URL = u.srv.URL
	return u
}

// Close stops the fake, cutting open streams.
func (u *Upstream) Close() {
	u.srv.CloseClientConnections()
	u.srv.Close()
}

// Enqueue scripts the next requests, one reply each.
func (u *Upstream) Enqueue(r ...Reply) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queue = append(u.queue, r...)
}

// RequireKey makes the fake answer 401 to a request without this key.
func (u *Upstream) RequireKey(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.key = key
}

// Requests returns the requests received so far.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.reqs...)
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request, anthropic bool) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, anthropic, Reply{Status: 400, Code: "invalid_request_error"}, "body is not JSON")
		return
	}
	req := Request{Path: r.URL.Path, Body: body}
	req.Model, _ = body["model"].(string)
	req.Stream, _ = body["stream"].(bool)
	if anthropic {
		req.Key = r.Header.Get("X-Api-Key")
	} else {
		req.Key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	u.mu.Lock()
	u.reqs = append(u.reqs, req)
	reply := Reply{}
	if len(u.queue) > 0 {
		reply, u.queue = u.queue[0], u.queue[1:]
	}
	if u.key != "" && req.Key != u.key {
		reply = Reply{Status: 401, Code: "invalid_api_key"}
		if anthropic {
			reply.Code = "authentication_error"
		}
	}
	u.mu.Unlock()
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status != 0 && reply.Status != 200 {
		writeError(w, anthropic, reply, http.StatusText(reply.Status))
		return
	}
	if reply.Text == "" {
		reply.Text = DefaultText
	}
	if name := firstTool(body); reply.Tool == "" && name != "" {
		// Offered tools: the model calls the first one.
		reply.Tool, reply.Arguments = name, `{"city":"Paris"}`
	}
	switch {
	case anthropic && req.Stream:
		streamAnthropic(w, req, reply)
	case anthropic:
		writeJSON(w, 200, anthropicMessage(req, reply))
	case req.Stream:
		streamOpenAI(w, req, reply)
	default:
		writeJSON(w, 200, openAICompletion(req, reply))
	}
}

func writeError(w http.ResponseWriter, anthropic bool, r Reply, msg string) {
	code := r.Code
	if code == "" {
		code = "api_error"
	}
	if anthropic {
		writeJSON(w, r.Status, map[string]any{"type": "error", "error": map[string]any{"type": code, "message": msg}})
		return
	}
	typ := "invalid_request_error"
	if code == "insufficient_quota" {
		typ = code
	}
	writeJSON(w, r.Status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var usage = map[string]any{"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}

func openAICompletion(req Request, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	finish := "stop"
	if r.Tool != "" {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": r.Tool, "arguments": r.Arguments}}}
		finish = "tool_calls"
	}
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage}
}

func anthropicMessage(req Request, r Reply) map[string]any {
	content := []any{map[string]any{"type": "text", "text": r.Text}}
	stop := "end_turn"
	if r.Tool != "" {
		var input any
		_ = json.Unmarshal([]byte(r.Arguments), &input)
		content = []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": r.Tool, "input": input}}
		stop = "tool_use"
	}
	return map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 5, "output_tokens": 3}}
}

// events writes server-sent events, flushing each, and drops the
// connection after cutAfter content events when cutAfter > 0.
type events struct {
	w        http.ResponseWriter
	content  int
	cutAfter int
}

func newEvents(w http.ResponseWriter, cutAfter int) *events {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	return &events{w: w, cutAfter: cutAfter}
}

func (e *events) send(name string, v any, content bool) {
	if content && e.cutAfter > 0 && e.content == e.cutAfter {
		panic(http.ErrAbortHandler)
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	if s, ok := v.(string); ok {
		fmt.Fprintf(e.w, "data: %s\n\n", s)
	} else {
		b, _ := json.Marshal(v)
		fmt.Fprintf(e.w, "data: %s\n\n", b)
	}
	e.w.(http.Flusher).Flush()
	if content {
		e.content++
	}
}

func words(s string) []string { return strings.SplitAfter(s, " ") }

func streamOpenAI(w http.ResponseWriter, req Request, r Reply) {
	e := newEvents(w, r.CutAfter)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil), false)
	finish := "stop"
	if r.Tool != "" {
		e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": r.Tool, "arguments": ""}}}}, nil), true)
		e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": r.Arguments}}}}, nil), true)
		finish = "tool_calls"
	} else {
		for _, p := range words(r.Text) {
			e.send("", chunk(map[string]any{"content": p}, nil), true)
		}
	}
	e.send("", chunk(map[string]any{}, finish), true)
	if so, _ := req.Body["stream_options"].(map[string]any); so["include_usage"] == true {
		e.send("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{}, "usage": usage}, false)
	}
	e.send("", "[DONE]", false)
}

func streamAnthropic(w http.ResponseWriter, req Request, r Reply) {
	e := newEvents(w, r.CutAfter)
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 5, "output_tokens": 1}}}, false)
	stop := "end_turn"
	if r.Tool != "" {
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": r.Tool, "input": map[string]any{}}}, false)
		e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": r.Arguments}}, true)
		stop = "tool_use"
	} else {
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}, false)
		e.send("ping", map[string]any{"type": "ping"}, false)
		for _, p := range words(r.Text) {
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": p}}, true)
		}
	}
	e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}, false)
	e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 3}}, true)
	e.send("message_stop", map[string]any{"type": "message_stop"}, false)
}

// Env returns the gateway configuration of a CHAT scope with two sources of
// the given provider ("openai" or "anthropic") on these fakes: primary
// first, backup (priority 1) when primary cannot run. The keys are those
// you would export as environment variables.
func Env(provider string, primary, backup *Upstream) map[string]string {
	base := func(u *Upstream) string {
		if provider == "anthropic" {
			return u.URL
		}
		return u.URL + "/v1"
	}
	return map[string]string{
		"PGW_SCOPES":              "CHAT",
		"CHAT__SOURCES":           "primary,backup",
		"CHAT__FAILURE_THRESHOLD": "3",
		"CHAT__PRIMARY__PROVIDER": provider,
		"CHAT__PRIMARY__BASE_URL": base(primary),
		"CHAT__PRIMARY__API_KEY":  "sk-primary",
		"CHAT__BACKUP__PROVIDER":  provider,
		"CHAT__BACKUP__BASE_URL":  base(backup),
		"CHAT__BACKUP__API_KEY":   "sk-backup",
		"CHAT__BACKUP__PRIORITY":  "1",
	}
}

// firstTool is the name of the first tool a request offers, in either
// provider's form.
func firstTool(body map[string]any) string {
	tools, _ := body["tools"].([]any)
	if len(tools) == 0 {
		return ""
	}
	t, _ := tools[0].(map[string]any)
	if fn, ok := t["function"].(map[string]any); ok {
		name, _ := fn["name"].(string)
		return name
	}
	name, _ := t["name"].(string)
	return name
}
