package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// embedPath is appended to Source.BaseURL (which includes /v1).
const embedPath = "/embeddings"

type embedRequest struct {
	Model          string   `json:"model,omitempty"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type wireEmbedding struct {
	Index     *int      `json:"index"` // nil: absent, as some compatible servers send it
	Embedding []float32 `json:"embedding"`
}

type embedResponse struct {
	Data  []wireEmbedding `json:"data"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
	Model string          `json:"model"`
}

// Embed embeds one batch on src: POST {BaseURL}/embeddings with the inputs
// as an array and "encoding_format": "float". The vectors come back in input
// order whatever order the upstream lists them in (they are placed by their
// "index"; an answer whose vectors all lack one is taken in the order it
// lists them); an answer that does not hold exactly one non-empty vector per
// input, or that gives an index to some vectors only, is an error. req.Model, when empty, is src.Model. An empty batch returns an empty
// response without a request. Splitting large inputs into batches is the
// gateway's job, not this method's.
func (c *Client) Embed(ctx context.Context, src transport.Source, req transport.EmbedRequest) (transport.EmbedResponse, error) {
	if len(req.Inputs) == 0 {
		return transport.EmbedResponse{Vectors: [][]float32{}}, nil
	}
	model := req.Model
	if model == "" {
		model = src.Model
	}
	resp, err := c.post(ctx, src, embedPath, embedRequest{Model: model, Input: req.Inputs, EncodingFormat: "float"}, false)
	if err != nil {
		return transport.EmbedResponse{}, err
	}
	var er embedResponse
	if err := decodeJSON(ctx, src, "embeddings", resp, &er); err != nil {
		return transport.EmbedResponse{}, err
	}
	observe.NoteResponseModel(ctx, er.Model)
	if provider.HasAnswerError(er.Error) {
		return transport.EmbedResponse{}, upstreamError(src, er.Error)
	}
	vectors, err := inInputOrder(er.Data, len(req.Inputs))
	if err != nil {
		return transport.EmbedResponse{}, fmt.Errorf("openai: source %q: embeddings response: %w", src.Name, err)
	}
	return transport.EmbedResponse{Vectors: vectors, Usage: er.Usage.usage()}, nil
}

// inInputOrder places each vector at its index, checking that the indices
// are exactly 0..n-1. When no vector has an index, the list's order is the
// input order.
func inInputOrder(data []wireEmbedding, n int) ([][]float32, error) {
	if len(data) != n {
		return nil, fmt.Errorf("got %d vectors for %d inputs", len(data), n)
	}
	indexed := slices.ContainsFunc(data, func(d wireEmbedding) bool { return d.Index != nil })
	vectors := make([][]float32, n)
	for pos, d := range data {
		i := pos
		switch {
		case d.Index != nil:
			i = *d.Index
		case indexed:
			return nil, fmt.Errorf("vector %d of the list has no index while others have one", pos)
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("vector index %d outside 0..%d", i, n-1)
		}
		if vectors[i] != nil {
			return nil, fmt.Errorf("vector index %d given twice", i)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("vector index %d is empty", i)
		}
		vectors[i] = slices.Clip(d.Embedding)
	}
	return vectors, nil
}
