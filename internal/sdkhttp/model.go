package sdkhttp

import (
	"bytes"
	"encoding/json"
)

// ModelSpan finds the value of the top-level "model" key of a JSON object
// body: body[start:end] is its JSON string. ok is false when the body is not
// a JSON object or has no string model.
func ModelSpan(body []byte) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		key, _ := k.(string)
		off := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if key != "model" {
			continue
		}
		if len(raw) == 0 || raw[0] != '"' {
			return 0, 0, false
		}
		end = int(dec.InputOffset())
		start = off + bytes.Index(body[off:end], raw[:1])
		return start, end, true
	}
	return 0, 0, false
}

// WithModel returns body with body[start:end] replaced by model as a JSON
// string.
func WithModel(body []byte, start, end int, model string) []byte {
	enc, _ := json.Marshal(model)
	out := make([]byte, 0, len(body)-(end-start)+len(enc))
	out = append(out, body[:start]...)
	out = append(out, enc...)
	return append(out, body[end:]...)
}
