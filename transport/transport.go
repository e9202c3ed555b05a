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

// EmbedRequest asks for one vector per input.
type EmbedRequest struct {
	// Inputs are the texts to embed: at least one.
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
	// Image is the image's bytes: never empty.
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
