package openai

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/pgw-go/pgw/transport"
)

// DefaultOCRPrompt is the instruction sent with an image when
// OCRRequest.Prompt is empty.
const DefaultOCRPrompt = "Transcribe all text in this image."

// OCR reads one image on src as a non-streamed vision chat request: POST
// {BaseURL}/chat/completions with one user message holding the prompt
// (DefaultOCRPrompt when req.Prompt is empty) and the image as a data URL
// (data:<mime>;base64,…). req.MIME, when empty, is detected from the bytes
// (http.DetectContentType). The image is not validated here: an upstream
// that cannot read it answers 400, which the gateway returns to the caller
// without retrying. req.Model, when empty, is src.Model. src.MaxTokens, when
// set, bounds the answer as it bounds a chat request's (max_completion_tokens
// on OpenAI's own API, max_tokens elsewhere).
func (c *Client) OCR(ctx context.Context, src transport.Source, req transport.OCRRequest) (transport.OCRResponse, error) {
	model := req.Model
	if model == "" {
		model = src.Model
	}
	prompt := req.Prompt
	if prompt == "" {
		prompt = DefaultOCRPrompt
	}
	body := chatRequest{
		Model: model,
		Messages: []wireMessage{{
			Role: "user",
			Content: []wirePart{
				{Type: transport.PartText, Text: prompt},
				{Type: transport.PartImageURL, ImageURL: &transport.ImageURL{URL: DataURL(req.Image, req.MIME)}},
			},
		}},
	}
	body.limitAnswer(baseHost(src.BaseURL), src.MaxTokens)
	resp, err := c.post(ctx, src, chatPath, body, false)
	if err != nil {
		return transport.OCRResponse{}, err
	}
	var wc wireCompletion
	if err := decodeJSON(ctx, src, "OCR", resp, &wc); err != nil {
		return transport.OCRResponse{}, err
	}
	chunk, err := wc.chunk(src)
	if err != nil {
		return transport.OCRResponse{}, err
	}
	out := transport.OCRResponse{Text: chunk.Delta, FinishReason: chunk.FinishReason, Refusal: chunk.Refusal}
	if chunk.Usage != nil {
		out.Usage = *chunk.Usage
	}
	return out, nil
}

// DataURL returns image as a base64 data URL. An empty mimeType is detected
// from the bytes (http.DetectContentType, without parameters).
func DataURL(image []byte, mimeType string) string {
	if mimeType == "" {
		mimeType, _, _ = strings.Cut(http.DetectContentType(image), ";")
	}
	prefix := "data:" + mimeType + ";base64,"
	buf := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(len(image)))
	copy(buf, prefix)
	base64.StdEncoding.Encode(buf[len(prefix):], image)
	return string(buf)
}
