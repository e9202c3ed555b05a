package sdkhttp

import (
	"bytes"
	"encoding/json"

	"github.com/pgw-go/pgw/transport"
)

// usageJSON holds both providers' names for token counts.
type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
}

func (u *usageJSON) usage() *transport.Usage {
	if u == nil {
		return nil
	}
	out := transport.Usage{
		PromptTokens:     max(u.PromptTokens, u.InputTokens),
		CompletionTokens: max(u.CompletionTokens, u.OutputTokens),
		TotalTokens:      u.TotalTokens,
	}
	if out == (transport.Usage{}) {
		return nil
	}
	return &out
}

func eventUsage(ev *eventJSON) *transport.Usage {
	switch {
	case ev.Usage != nil:
		return ev.Usage.usage()
	case ev.Message != nil && ev.Message.Usage != nil:
		return ev.Message.Usage.usage()
	case ev.Response != nil && ev.Response.Usage != nil:
		return ev.Response.Usage.usage()
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
	return u.usage()
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
