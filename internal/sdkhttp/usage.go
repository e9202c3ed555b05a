package sdkhttp

import (
	"bytes"
	"encoding/json"

	"github.com/pgw-go/pgw/transport"
)

// usageJSON holds both providers' names for token counts: OpenAI's chat
// completions (prompt_tokens, with details), its Responses API
// (input_tokens, which include the cached ones, with details) and
// Anthropic's Messages API (input_tokens, which exclude what was read from
// or written to the prompt cache, counted apart).
type usageJSON struct {
	PromptTokens             int           `json:"prompt_tokens"`
	CompletionTokens         int           `json:"completion_tokens"`
	TotalTokens              int           `json:"total_tokens"`
	InputTokens              *int          `json:"input_tokens"`
	OutputTokens             int           `json:"output_tokens"`
	CacheCreationInputTokens *int          `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int          `json:"cache_read_input_tokens"`
	PromptTokensDetails      *tokenDetails `json:"prompt_tokens_details"`
	InputTokensDetails       *tokenDetails `json:"input_tokens_details"`
	CompletionTokensDetails  *tokenDetails `json:"completion_tokens_details"`
	OutputTokensDetails      *tokenDetails `json:"output_tokens_details"`
}

// tokenDetails is OpenAI's breakdown of prompt or completion tokens.
type tokenDetails struct {
	CachedTokens    int `json:"cached_tokens"`
	ReasoningTokens int `json:"reasoning_tokens"`
}

// inputParts are the parts of a prompt's count that a stream's events
// report one by one (Anthropic's message_delta may repeat or update some of
// what message_start said): the latest figure of each.
type inputParts struct {
	input, cacheWrite, cacheRead int
}

// usage is u as pgw counts it, its input figures taken into parts first:
// every prompt token, cached or not, is a prompt token, as pgw's own
// transports count them. TotalTokens is left 0 when the upstream reports
// none (Anthropic): an event may report only some of the figures, and the
// stream's end sums them.
func (u *usageJSON) usage(parts *inputParts) *transport.Usage {
	if u == nil {
		return nil
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&parts.input, u.InputTokens)
	set(&parts.cacheWrite, u.CacheCreationInputTokens)
	set(&parts.cacheRead, u.CacheReadInputTokens)
	out := transport.Usage{
		PromptTokens:       max(u.PromptTokens, parts.input+parts.cacheWrite+parts.cacheRead),
		CompletionTokens:   max(u.CompletionTokens, u.OutputTokens),
		TotalTokens:        u.TotalTokens,
		CachedPromptTokens: parts.cacheRead,
	}
	for _, d := range []*tokenDetails{u.PromptTokensDetails, u.InputTokensDetails} {
		if d != nil {
			out.CachedPromptTokens = max(out.CachedPromptTokens, d.CachedTokens)
		}
	}
	for _, d := range []*tokenDetails{u.CompletionTokensDetails, u.OutputTokensDetails} {
		if d != nil {
			out.ReasoningTokens = max(out.ReasoningTokens, d.ReasoningTokens)
		}
	}
	if out == (transport.Usage{}) {
		return nil
	}
	return &out
}

// eventUsage is the usage ev reports, its input figures merged into parts.
func eventUsage(ev *eventJSON, parts *inputParts) *transport.Usage {
	switch {
	case ev.Usage != nil:
		return ev.Usage.usage(parts)
	case ev.Message != nil && ev.Message.Usage != nil:
		return ev.Message.Usage.usage(parts)
	case ev.Response != nil && ev.Response.Usage != nil:
		return ev.Response.Usage.usage(parts)
	}
	return nil
}

var usageKey = []byte(`"usage"`)

// JSONUsage reads the token usage of a JSON answer (chat completion,
// Responses, Messages, embeddings): the object under its last "usage" key,
// found from the end so that a large answer is not decoded again. nil when
// there is none.
func JSONUsage(body []byte) *transport.Usage {
	i := bytes.LastIndex(body, usageKey)
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(body[i+len(usageKey):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return nil
	}
	var u usageJSON
	if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&u) != nil {
		return nil
	}
	return u.usage(&inputParts{})
}

// JSONModel reads the model a JSON answer names at its top level ("model"),
// without decoding the rest of it into values; empty when there is none.
func JSONModel(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if key, _ := tok.(string); key == "model" {
			var m string
			if dec.Decode(&m) != nil {
				return ""
			}
			return m
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}
