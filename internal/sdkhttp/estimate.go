package sdkhttp

import (
	"bytes"

	"github.com/pgw-go/pgw/transport"
)

// MinBinaryRun is the shortest run of base64 text in a request body that
// EstimateTokens counts as one image rather than as text.
const MinBinaryRun = 1 << 10

var base64Word = []byte("base64")

// EstimateTokens is the token reservation of a request body sent through
// the governed client: about four bytes per token, except that each run of
// base64 text of at least MinBinaryRun bytes — an image or a file, sent as
// a data: URI (OpenAI) or a base64 source (Anthropic) — counts
// transport.ImageTokenEstimate, as an image part of a ChatRequest does, and
// not its size: a photo's hundreds of kilobytes of base64 are not that many
// tokens, and would not fit a modest TPM. A body that does not contain the
// word "base64" is not scanned.
func EstimateTokens(body []byte) int64 {
	n := len(body)
	if !bytes.Contains(body, base64Word) {
		return int64(n+3) / 4
	}
	images := 0
	for i := 0; i < len(body); {
		if !isBase64(body, i) {
			i++
			continue
		}
		j := i
		for j < len(body) && isBase64(body, j) {
			if body[j] == '\\' {
				j++ // "\/", a slash as some JSON encoders write it
			}
			j++
		}
		if j-i >= MinBinaryRun {
			n -= j - i
			images++
		}
		i = j
	}
	return int64(n+3)/4 + int64(images)*transport.ImageTokenEstimate
}

// isBase64 reports whether body[i] is a character of standard or URL-safe
// base64, or the backslash of an escaped slash ("\/").
func isBase64(body []byte, i int) bool {
	c := body[i]
	switch {
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=', c == '-', c == '_':
		return true
	case c == '\\':
		return i+1 < len(body) && body[i+1] == '/'
	}
	return false
}
