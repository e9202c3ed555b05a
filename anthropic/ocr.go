package anthropic

import (
	"context"
	"io"

	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

var _ transport.OCRTransport = (*Client)(nil)

// OCR reads one image on src as a Messages request: one user turn holding
// the prompt (openai.DefaultOCRPrompt when req.Prompt is empty) and the
// image as a base64 block (req.MIME, when empty, detected from the bytes),
// streamed and collected. req.Model, when empty, is src.Model.
func (c *Client) OCR(ctx context.Context, src transport.Source, req transport.OCRRequest) (transport.OCRResponse, error) {
	prompt := req.Prompt
	if prompt == "" {
		prompt = openai.DefaultOCRPrompt
	}
	st, err := c.ChatStream(ctx, src, transport.ChatRequest{
		Model: req.Model,
		Messages: []transport.Message{{Role: transport.RoleUser, Parts: []transport.ContentPart{
			transport.TextPart(prompt),
			transport.ImagePart(openai.DataURL(req.Image, req.MIME), ""),
		}}},
	})
	if err != nil {
		return transport.OCRResponse{}, err
	}
	defer st.Close()
	var col transport.Collector
	for {
		ch, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return transport.OCRResponse{}, err
		}
		col.Add(ch)
	}
	r := col.Response()
	return transport.OCRResponse{Text: r.Content, FinishReason: r.FinishReason, Refusal: r.Refusal, Usage: r.Usage}, nil
}
