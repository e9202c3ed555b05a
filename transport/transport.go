// Package transport defines what the gateway sends to an upstream and what it
// gets back: the request and response types of chat, embedding and OCR calls
// and the three transport interfaces an SDK adapter implements. The default
// implementations are in package openai (the OpenAI-compatible HTTP API, all
// three) and package anthropic (Anthropic's Messages API, chat and OCR). The
// root package re-exports these names (pgw.ChatRequest, …).
package transport

import (
	"context"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
)

// Source is one upstream of a scope, as configured.
type Source = config.Source

// HTTPError is an upstream HTTP failure, as the default transports return
// it: the status (StatusCode), the upstream's Retry-After (RetryAfter) and
// error text (Message, never credentials), where it came from (Scope,
// Source, Path). A custom transport returns one (or pgw.HTTPError, which the
// gateway treats alike) so that the failure is classified by its status;
// errors.As into *pgw.HTTPError matches it.
type HTTPError = errs.HTTPError

// EmbedRequest asks for one vector per input.
type EmbedRequest struct {
	// Inputs are the texts to embed: at least one, none the empty string
	// (the embeddings API rejects it; whitespace is sent). The gateway
	// splits more inputs than the scope's smallest BATCH_SIZE into
	// sub-batches.
	Inputs []string
	// Model, when empty, is the source's configured model.
	Model string
}

// EmbedResponse holds vectors in input order.
type EmbedResponse struct {
	// Vectors holds one vector per input, Vectors[i] for Inputs[i].
	Vectors [][]float32
	// Usage is the token usage the upstream reported; for a split request,
	// the sum over the sub-batches that succeeded.
	Usage Usage
}

// OCRRequest carries one image (PNG or JPEG bytes).
type OCRRequest struct {
	// Image is the encoded image, sent as is: never empty.
	Image []byte
	// MIME is the image type; empty means detected from the bytes.
	MIME string
	// Prompt is the instruction sent with the image; empty means the
	// transport's default (openai.DefaultOCRPrompt for the built-in ones).
	Prompt string
	// Model, when empty, is the source's configured model.
	Model string
}

// OCRResponse is the text read from one image.
type OCRResponse struct {
	// Text is the model's transcription of the image.
	Text string
	// FinishReason is why the answer ended, in a chat answer's terms:
	// "stop"; "length" when the answer's bound (MAX_TOKENS) cut the
	// transcription short; "content_filter" when a filter or the model's
	// refusal ended it; empty when the upstream said none.
	FinishReason string
	// Refusal is the model's refusal text, when it refused to read the
	// image (Text is then usually empty).
	Refusal string
	// Usage is the token usage the upstream reported.
	Usage Usage
}

// ChatTransport opens a streamed chat completion on one source.
type ChatTransport interface {
	// ChatStream sends req to src and returns once the upstream has
	// answered with its headers; the chunks are read through the stream,
	// which lives within ctx and which the caller closes. An upstream
	// failure should be returned as an error carrying its HTTP status (an
	// *HTTPError, or any error the gateway's classification understands)
	// so that a 429 is paced and a 5xx fails over.
	ChatStream(ctx context.Context, src Source, req ChatRequest) (ChatStream, error)
}

// EmbedTransport embeds one batch on one source.
type EmbedTransport interface {
	// Embed sends one batch to src and returns exactly one vector per
	// input, in input order (the gateway treats any other count as a
	// failed attempt). Errors are reported as for ChatTransport.ChatStream.
	Embed(ctx context.Context, src Source, req EmbedRequest) (EmbedResponse, error)
}

// OCRTransport reads one image on one source.
type OCRTransport interface {
	// OCR sends one image to src and returns the text read from it.
	// Errors are reported as for ChatTransport.ChatStream.
	OCR(ctx context.Context, src Source, req OCRRequest) (OCRResponse, error)
}
