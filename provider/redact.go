package provider

import (
	"bytes"
	"encoding/json"
	"strings"
)

// RedactCredentials returns b with each of creds (Credentials) replaced by
// Redacted. A body that is JSON stays JSON, so that an SDK can still parse
// the error answer it is handed: a credential is redacted inside string
// values and keys (escaped forms included, as the SDK decodes them), and a
// number that shows one becomes the string "[redacted]" — a plain byte
// replacement would leave [redacted] unquoted where the number was. A body
// that opens as JSON but is not valid (one cut at MaxErrorBody) is read the
// same way, its last string even when the cut left it open, so that an
// escaped credential is found there too. Any other text is redacted byte by
// byte. b is returned as it is when no credential occurs in it, and is never
// modified: a redacted body is a new slice.
func RedactCredentials(b []byte, creds []string) []byte {
	if len(creds) == 0 || !mayHold(b, creds) {
		return b
	}
	if looksJSON(b) {
		b = redactJSON(b, creds)
	}
	return redactBytes(b, creds) // text, or a credential across JSON tokens
}

// mayHold reports whether b can show one of creds: it does, or a JSON
// string escape could spell one.
func mayHold(b []byte, creds []string) bool {
	for _, c := range creds {
		if bytes.Contains(b, []byte(c)) {
			return true
		}
	}
	return bytes.IndexByte(b, '\\') >= 0
}

func redactBytes(b []byte, creds []string) []byte {
	for _, c := range creds {
		if bytes.Contains(b, []byte(c)) {
			b = bytes.ReplaceAll(b, []byte(c), []byte(Redacted))
		}
	}
	return b
}

// redactJSON rewrites the strings and numbers of JSON text b that show a
// credential, copying everything else as it is.
func redactJSON(b []byte, creds []string) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			end, closed := stringEnd(b, i)
			out = append(out, redactString(b[i:end], closed, creds)...)
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end := i + 1
			for end < len(b) && strings.IndexByte("0123456789+-.eE", b[end]) >= 0 {
				end++
			}
			num := string(b[i:end])
			if red := redactText(num, creds); red != num {
				out = appendJSONString(out, red)
			} else {
				out = append(out, num...)
			}
			i = end
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// stringEnd returns the index just past the JSON string that opens at i,
// and whether its closing quote is there: a string of a cut body may end
// with the body.
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(b), false
}

// redactString returns the JSON string raw (quotes included; the closing
// one missing unless closed) with creds redacted from its decoded text,
// re-encoded only when that changed it. A string left open stays open.
func redactString(raw []byte, closed bool, creds []string) []byte {
	whole := raw
	if !closed {
		whole = append(append([]byte(nil), raw...), '"')
	}
	var red []byte
	if bytes.IndexByte(raw, '\\') < 0 {
		if !containsAny(raw, creds) {
			return raw
		}
		red = appendJSONString(nil, redactText(string(whole[1:len(whole)-1]), creds))
	} else {
		var s string
		if json.Unmarshal(whole, &s) != nil {
			return raw // the byte replacement still sees what is not escaped
		}
		r := redactText(s, creds)
		if r == s {
			return raw
		}
		red = appendJSONString(nil, r)
	}
	if !closed {
		red = red[:len(red)-1]
	}
	return red
}

func containsAny(b []byte, creds []string) bool {
	for _, c := range creds {
		if bytes.Contains(b, []byte(c)) {
			return true
		}
	}
	return false
}

func redactText(s string, creds []string) string {
	for _, c := range creds {
		s = strings.ReplaceAll(s, c, Redacted)
	}
	return s
}

// appendJSONString appends s as a JSON string, without the HTML escapes
// json.Marshal adds: the text stays as readable as the upstream wrote it.
func appendJSONString(out []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(out, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
