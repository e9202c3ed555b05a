package testutil

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Endpoint is the kind of request the fake upstream tells apart. OCR is a
// chat completion whose messages carry an image_url part.
type Endpoint string

// The endpoints of the fake upstream.
const (
	Chat       Endpoint = "chat"
	Embeddings Endpoint = "embeddings"
	OCR        Endpoint = "ocr"
)

// Default answers of the fake upstream.
const (
	DefaultAnswer  = "Hello from the fake upstream."
	DefaultOCRText = "FAKE OCR TEXT"
	// EmbeddingDims is the length of every vector the fake returns.
	EmbeddingDims = 8
)

// Usage is the token count the fake reports, in OpenAI's field names.
type Usage struct {
	// PromptTokens, CompletionTokens and TotalTokens are sent as the
	// usage object's prompt_tokens, completion_tokens and total_tokens.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Reply scripts the fake's answer to one request. The zero Reply is a
// success with the default answer.
type Reply struct {
	// Status, when neither 0 nor 200, makes the reply an OpenAI error
	// object {"error": {"message", "type", "code"}} with this status.
	Status int
	// RetryAfter, when set, is sent verbatim as the Retry-After header
	// ("2", or an HTTP date such as time.Now().Add(d).UTC().Format(http.TimeFormat)).
	RetryAfter string
	// Message and Code fill the error object; Message defaults to the
	// status text.
	Message string
	Code    string
	// Text is the answer of a chat or OCR request (DefaultAnswer,
	// DefaultOCRText when empty).
	Text string
	// Chunks are the streamed pieces of a chat answer; by default Text
	// split after each space.
	Chunks []string
	// FirstTokenDelay holds the first content chunk of a stream back (the
	// headers are already sent), or a non-streamed answer, for this long,
	// or until the client goes away.
	FirstTokenDelay time.Duration
	// Cut drops the connection, without ending the chunked body, after
	// CutAfter content chunks: a stream cut mid-answer.
	Cut      bool
	CutAfter int
	// BeforeChunk, when set, runs before content chunk i (from 0) of a
	// stream is written; tests block in it on a channel to gate the
	// server. It must return when ctx (the request's) is done.
	BeforeChunk func(ctx context.Context, i int)
	// Usage replaces the computed token counts.
	Usage *Usage
	// ToolCalls, when set, make a chat answer ask for these tools (after
	// any Text given explicitly) and finish with "tool_calls" ("tool_use"
	// on the Anthropic endpoint); see upstream_tools.go.
	ToolCalls []ToolCall
}

// Request is what the fake recorded of one request.
type Request struct {
	// Endpoint is the kind of request the fake took it for.
	Endpoint Endpoint
	// Path is the request's URL path.
	Path string
	// Authorization is the request's Authorization header, as sent.
	Authorization string
	// Body is the request body, as sent.
	Body []byte
	// Model is the body's "model".
	Model string
	// Stream is the body's "stream".
	Stream bool
	// IncludeUsage is the body's "stream_options.include_usage".
	IncludeUsage bool
	// Prompt is the text of the messages (the text parts of an OCR request).
	Prompt string
	// ImageURL is the image_url of an OCR request.
	ImageURL string
	// Inputs are the inputs of an embeddings request.
	Inputs []string
	// Header is a copy of the request's headers.
	Header http.Header
	// APIKey is the x-api-key header (Anthropic's credential).
	APIKey string
}

// Upstream is a fake OpenAI-compatible API on a loopback httptest server:
// POST /v1/chat/completions (SSE when "stream": true, a JSON completion
// otherwise; a request with an image_url part counts as OCR) and POST
// /v1/embeddings (vectors listed in reverse order, so clients must sort by
// index). Each request takes the next enqueued Reply of its endpoint, else
// the endpoint's script, else a success. Safe for concurrent use.
type Upstream struct {
	// URL is the base URL, /v1 included: what Source.BaseURL is set to.
	URL string

	srv  *httptest.Server
	done chan struct{} // closed by stop: releases delayed handlers

	mu      sync.Mutex
	queue   map[Endpoint][]Reply
	scripts map[Endpoint]func(n int) Reply
	counts  map[Endpoint]int
	last    map[Endpoint]Request
	lastAny Request
	apiKey  string
	queries queryCheck  // see upstream_query.go
	conc    concurrency // see upstream_peak.go
}

// NewUpstream starts a fake upstream stopped by t.Cleanup.
func NewUpstream(t testing.TB) *Upstream {
	t.Helper()
	u, stop := StartUpstream()
	t.Cleanup(stop)
	return u
}

// StartUpstream starts a fake upstream for code without a testing.TB, such
// as examples. stop shuts it down (idempotent): delayed and gated answers
// are released and the server waits for its handlers.
func StartUpstream() (u *Upstream, stop func()) {
	u = &Upstream{
		done:    make(chan struct{}),
		queue:   map[Endpoint][]Reply{},
		scripts: map[Endpoint]func(int) Reply{},
		counts:  map[Endpoint]int{},
		last:    map[Endpoint]Request{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", u.serveChat)
	mux.HandleFunc("/v1/embeddings", u.serveEmbeddings)
	mux.HandleFunc("/v1/messages", u.serveMessages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, Reply{Status: http.StatusNotFound, Message: "unknown path " + r.URL.Path, Code: "not_found"})
	})
	u.srv = httptest.NewServer(u.conc.wrap(u.queries.wrap(mux)))
	u.URL = u.srv.URL + "/v1"
	var once sync.Once
	return u, func() {
		once.Do(func() {
			close(u.done)
			u.srv.CloseClientConnections()
			u.srv.Close()
		})
	}
}

// Enqueue scripts the next requests to ep, one reply each, in order.
func (u *Upstream) Enqueue(ep Endpoint, replies ...Reply) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queue[ep] = append(u.queue[ep], replies...)
}

// SetScript answers requests to ep, once the queue is empty, with script(n),
// n being the request's 1-based number among requests to ep. A nil script
// restores plain success.
func (u *Upstream) SetScript(ep Endpoint, script func(n int) Reply) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if script == nil {
		delete(u.scripts, ep)
		return
	}
	u.scripts[ep] = script
}

// SetDefault answers every request to ep, once the queue is empty, with r.
func (u *Upstream) SetDefault(ep Endpoint, r Reply) {
	u.SetScript(ep, func(int) Reply { return r })
}

// RequireAPIKey makes the fake answer 401 to any request whose
// Authorization is not "Bearer key". Like a careless proxy, the 401 message
// echoes the key it was sent, so tests can check that clients redact it.
func (u *Upstream) RequireAPIKey(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.apiKey = key
}

// Requests returns how many requests reached ep.
func (u *Upstream) Requests(ep Endpoint) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[ep]
}

// TotalRequests returns how many requests reached any endpoint.
func (u *Upstream) TotalRequests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, c := range u.counts {
		n += c
	}
	return n
}

// LastRequest returns the last request to ep (the zero Request if none).
func (u *Upstream) LastRequest(ep Endpoint) Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last[ep]
}

// LastAuthorization returns the Authorization header of the last request to
// any endpoint.
func (u *Upstream) LastAuthorization() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastAny.Authorization
}

// admit records req and returns the reply scripted for it, or an
// authorization failure.
func (u *Upstream) admit(req Request) Reply {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.counts[req.Endpoint]++
	u.last[req.Endpoint] = req
	u.lastAny = req
	if u.apiKey != "" && req.Authorization != "Bearer "+u.apiKey && req.APIKey != u.apiKey {
		sent := strings.TrimPrefix(req.Authorization, "Bearer ")
		return Reply{Status: http.StatusUnauthorized, Message: "Incorrect API key provided: " + sent, Code: "invalid_api_key"}
	}
	if q := u.queue[req.Endpoint]; len(q) > 0 {
		u.queue[req.Endpoint] = q[1:]
		return q[0]
	}
	if script := u.scripts[req.Endpoint]; script != nil {
		return script(u.counts[req.Endpoint])
	}
	return Reply{}
}

// chatBody is the part of a chat request the fake reads.
type chatBody struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (u *Upstream) serveChat(w http.ResponseWriter, r *http.Request) {
	body, ok := readPost(w, r)
	if !ok {
		return
	}
	var cb chatBody
	if err := json.Unmarshal(body, &cb); err != nil || len(cb.Messages) == 0 {
		writeError(w, Reply{Status: http.StatusBadRequest, Message: "body must be a chat request with messages", Code: "invalid_request_error"})
		return
	}
	req := Request{Endpoint: Chat, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body, Header: r.Header.Clone(),
		Model: cb.Model, Stream: cb.Stream, IncludeUsage: cb.StreamOptions != nil && cb.StreamOptions.IncludeUsage}
	var prompt []string
	for _, m := range cb.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			prompt = append(prompt, s)
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			switch p.Type {
			case "text":
				prompt = append(prompt, p.Text)
			case "image_url":
				req.Endpoint, req.ImageURL = OCR, p.ImageURL.URL
			}
		}
	}
	req.Prompt = strings.Join(prompt, "\n")
	reply := u.admit(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply)
		return
	}
	text := reply.Text
	if req.Endpoint == OCR {
		if !validImageURL(req.ImageURL) {
			writeError(w, Reply{Status: http.StatusBadRequest, Message: "image_url must be a base64 data:image/… URL", Code: "invalid_image_url"})
			return
		}
		if text == "" {
			text = DefaultOCRText
		}
	} else if text == "" {
		text = DefaultAnswer
	}
	chunks := reply.Chunks
	if chunks == nil {
		chunks = strings.SplitAfter(text, " ")
	}
	usage := Usage{PromptTokens: countWords(req.Prompt), CompletionTokens: len(chunks)}
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	usage.TotalTokens = max(usage.TotalTokens, usage.PromptTokens+usage.CompletionTokens)
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if cb.Stream {
		u.stream(w, r, req, reply, chunks, usage)
		return
	}
	if !u.wait(r.Context(), reply.FirstTokenDelay) {
		return
	}
	if reply.Cut {
		panic(http.ErrAbortHandler)
	}
	if len(reply.ToolCalls) > 0 {
		writeToolCompletion(w, cb.Model, reply, usage)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": cb.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": strings.Join(chunks, "")},
			"finish_reason": "stop",
		}},
		"usage": usage,
	})
}

// stream writes an SSE answer shaped like OpenAI's: a role-only chunk, one
// chunk per content piece, a finish chunk, the usage chunk when asked for,
// then [DONE]; each event flushed as it is written.
func (u *Upstream) stream(w http.ResponseWriter, r *http.Request, req Request, reply Reply, chunks []string, usage Usage) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	event(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	ctx := r.Context()
	if len(reply.ToolCalls) > 0 {
		if !u.wait(ctx, reply.FirstTokenDelay) {
			return
		}
		streamToolCalls(w, req, reply, usage, event, chunk)
		return
	}
	for i, piece := range chunks {
		if i == 0 && !u.wait(ctx, reply.FirstTokenDelay) {
			return
		}
		if reply.Cut && i == reply.CutAfter {
			panic(http.ErrAbortHandler)
		}
		if reply.BeforeChunk != nil {
			reply.BeforeChunk(ctx, i)
		}
		if ctx.Err() != nil {
			return
		}
		event(chunk(map[string]any{"content": piece}, nil))
	}
	if reply.Cut {
		panic(http.ErrAbortHandler)
	}
	event(chunk(map[string]any{}, "stop"))
	if req.IncludeUsage {
		event(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage})
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

func (u *Upstream) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, ok := readPost(w, r)
	if !ok {
		return
	}
	var eb struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	var inputs []string
	if err := json.Unmarshal(body, &eb); err == nil {
		var one string
		if json.Unmarshal(eb.Input, &one) == nil {
			inputs = []string{one}
		} else {
			_ = json.Unmarshal(eb.Input, &inputs)
		}
	}
	if len(inputs) == 0 {
		writeError(w, Reply{Status: http.StatusBadRequest, Message: "input must be a string or a non-empty array of strings", Code: "invalid_request_error"})
		return
	}
	req := Request{Endpoint: Embeddings, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body, Model: eb.Model, Inputs: inputs, Header: r.Header.Clone()}
	reply := u.admit(req)
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply)
		return
	}
	if !u.wait(r.Context(), reply.FirstTokenDelay) {
		return
	}
	if reply.Cut {
		panic(http.ErrAbortHandler)
	}
	data := make([]any, 0, len(inputs))
	words := 0
	for i := len(inputs) - 1; i >= 0; i-- {
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": FakeEmbedding(inputs[i])})
		words += countWords(inputs[i])
	}
	usage := Usage{PromptTokens: words, TotalTokens: words}
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "model": eb.Model, "data": data, "usage": usage})
}

// FakeEmbedding is the vector the fake returns for text: EmbeddingDims
// values in [0, 1) derived from an FNV hash, so tests can tell which input a
// vector belongs to.
func FakeEmbedding(text string) []float32 {
	v := make([]float32, EmbeddingDims)
	for i := range v {
		h := fnv.New32a()
		_, _ = fmt.Fprintf(h, "%d:%s", i, text)
		v[i] = float32(h.Sum32()%10000) / 10000
	}
	return v
}

// wait holds a handler for d, returning false when the client went away or
// the fake is stopping.
func (u *Upstream) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-u.done:
		return false
	}
}

func readPost(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, Reply{Status: http.StatusMethodNotAllowed, Message: "use POST", Code: "method_not_allowed"})
		return nil, false
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

func writeError(w http.ResponseWriter, reply Reply) {
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	msg := reply.Message
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	// Type and code as OpenAI sends them.
	typ, code := "invalid_request_error", any(nil)
	switch {
	case reply.Status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case reply.Status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case reply.Status >= 500:
		typ = "server_error"
	}
	if reply.Code != "" {
		code = reply.Code
	}
	if reply.Code == "insufficient_quota" {
		typ = reply.Code
	}
	writeJSON(w, reply.Status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func validImageURL(url string) bool {
	rest, ok := strings.CutPrefix(url, "data:image/")
	if !ok {
		return false
	}
	_, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(b64)
	return err == nil
}

func countWords(s string) int { return len(strings.Fields(s)) }
