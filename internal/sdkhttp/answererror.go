package sdkhttp

import (
	"bytes"
	"encoding/json"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/provider"
)

var errorKey = []byte(`"error"`)

// AnswerError reads a whole 2xx JSON answer of src that may carry an error,
// as some OpenAI-compatible servers send one with status 200. When its top
// level holds an "error" that is not null, raw is returned with src's
// Credentials and every echoed credential header redacted
// (provider.RedactAuthEchoBody; it is JSON still), and, unless the answer names a
// resource by an "object" field, the failure that error reports, as an
// error event of a stream does: a fine-tuning job or a background response
// says in "error" how it failed, and is an answer all the same. Any other
// answer is returned as it is, and without decoding it when it shows no
// "error" key but with the value null (the Responses API's success).
func AnswerError(raw []byte, src config.Source) ([]byte, error) {
	if !mayCarryError(raw) {
		return raw, nil
	}
	var top struct {
		Error  json.RawMessage `json:"error"`
		Object json.RawMessage `json:"object"`
	}
	if json.Unmarshal(raw, &top) != nil || !present(top.Error) {
		return raw, nil
	}
	creds := provider.Credentials(src)
	raw = provider.RedactAuthEchoBody(provider.RedactCredentials(raw, creds))
	if present(top.Object) {
		return raw, nil
	}
	return raw, errorFailure(top.Error, src, "in a 200 answer: ", "an error object in a 200 answer")
}

// present reports whether a JSON field was sent with a value other than
// null.
func present(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && !bytes.Equal(v, []byte("null"))
}

// mayCarryError reports whether raw has an "error" string followed by
// anything but a colon and null: only then is it decoded.
func mayCarryError(raw []byte) bool {
	for {
		i := bytes.Index(raw, errorKey)
		if i < 0 {
			return false
		}
		raw = raw[i+len(errorKey):]
		rest := bytes.TrimLeft(raw, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue // a value "error", not a key
		}
		if !bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte("null")) {
			return true
		}
	}
}
