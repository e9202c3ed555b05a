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
// Credentials redacted (it is JSON still), and, unless the answer names a
// resource by an "object" field, the failure that error reports, as an
// error event of a stream does: a fine-tuning job or a background response
// says in "error" how it failed, and is an answer all the same. Any other
// answer is returned as it is; it costs one bytes.Contains.
func AnswerError(raw []byte, src config.Source) ([]byte, error) {
	if !bytes.Contains(raw, errorKey) {
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
	raw = provider.RedactCredentials(raw, creds)
	if present(top.Object) {
		return raw, nil
	}
	return raw, errorFailure(top.Error, creds, "in a 200 answer: ", "an error object in a 200 answer")
}

// present reports whether a JSON field was sent with a value other than
// null.
func present(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && !bytes.Equal(v, []byte("null"))
}
