package pgw

import (
	"context"

	"github.com/pgw-go/pgw/anthropic"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/openai"
)

// providerChat is the default chat transport: each source is served by the
// transport of its PROVIDER — Anthropic's Messages API for anthropic, the
// OpenAI-compatible API for openai and azure — so that one scope can fail
// over between providers.
type providerChat struct {
	openai    *openai.Client
	anthropic *anthropic.Client
}

var (
	_ ChatTransport = providerChat{}
	// The gateway checks every source of a scope with it before a call's
	// first attempt.
	_ interface {
		ValidateChat(Source, ChatRequest) error
	} = providerChat{}
)

func (p providerChat) pick(src Source) interface {
	ChatTransport
	ValidateChat(Source, ChatRequest) error
} {
	if src.Provider == config.ProviderAnthropic {
		return p.anthropic
	}
	return p.openai
}

// ChatStream opens the answer on src's provider's transport.
func (p providerChat) ChatStream(ctx context.Context, src Source, req ChatRequest) (ChatStream, error) {
	return p.pick(src).ChatStream(ctx, src, req)
}

// ValidateChat reports a request src's provider cannot express.
func (p providerChat) ValidateChat(src Source, req ChatRequest) error {
	return p.pick(src).ValidateChat(src, req)
}

// providerOCR is the default OCR transport: each source is read by the
// transport of its PROVIDER, as for chat.
type providerOCR struct {
	openai    *openai.Client
	anthropic *anthropic.Client
}

var _ OCRTransport = providerOCR{}

// OCR reads the image on src's provider's transport.
func (p providerOCR) OCR(ctx context.Context, src Source, req OCRRequest) (OCRResponse, error) {
	if src.Provider == config.ProviderAnthropic {
		return p.anthropic.OCR(ctx, src, req)
	}
	return p.openai.OCR(ctx, src, req)
}
