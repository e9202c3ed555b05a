// Package transport defines what the gateway sends to an upstream and what it
// gets back: the request and response types of chat, embedding and OCR calls
// and the three transport interfaces an SDK adapter implements. The default
// implementations, speaking the OpenAI-compatible HTTP API, are in package
// openai. The root package re-exports these names (pgw.ChatRequest, …).
package transport

import (
	"context"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
)

// Source is one upstream of a scope, as configured.
type Source = config.Source

// HTTPError is an upstream HTTP failure; see errs.HTTPError.
type HTTPError = errs.HTTPError

// Usage is the token count of one call.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is a chat completion request. Model, when empty, is the
// source's configured model.
type ChatRequest struct {
	Messages    []Message
	Model       string
	MaxTokens   int
	Temperature *float64
	// EstTokens is the caller's estimate for quota reservation; 0 lets the
	// gateway estimate from the message text.
	EstTokens int
}

// ChatChunk is one piece of a streamed answer.
type ChatChunk struct {
	// Delta is the text added by this chunk.
	Delta string
	// FinishReason is set on the last chunk ("stop", "length", …).
	FinishReason string
	// Usage is set when the upstream reports it (usually the last chunk).
	Usage *Usage
}

// ChatStream yields chunks until io.EOF. Close must be called.
type ChatStream interface {
	// Recv returns the next chunk, io.EOF at the end, or an error.
	Recv() (ChatChunk, error)
	// Close releases the stream; safe to call more than once.
	Close() error
}

// ChatResponse is a collected chat answer.
type ChatResponse struct {
	Content      string
	FinishReason string
	Usage        Usage
	// Source is the name of the source that answered.
	Source string
}

// EmbedRequest asks for one vector per input.
type EmbedRequest struct {
	Inputs []string
	Model  string
}

// EmbedResponse holds vectors in input order.
type EmbedResponse struct {
	Vectors [][]float32
	Usage   Usage
}

// OCRRequest carries one image (PNG or JPEG bytes).
type OCRRequest struct {
	Image []byte
	// MIME is the image type; empty means detected from the bytes.
	MIME   string
	Prompt string
	Model  string
}

// OCRResponse is the text read from one image.
type OCRResponse struct {
	Text  string
	Usage Usage
}

// ChatTransport opens a streamed chat completion on one source.
type ChatTransport interface {
	ChatStream(ctx context.Context, src Source, req ChatRequest) (ChatStream, error)
}

// EmbedTransport embeds one batch on one source.
type EmbedTransport interface {
	Embed(ctx context.Context, src Source, req EmbedRequest) (EmbedResponse, error)
}

// OCRTransport reads one image on one source.
type OCRTransport interface {
	OCR(ctx context.Context, src Source, req OCRRequest) (OCRResponse, error)
}
