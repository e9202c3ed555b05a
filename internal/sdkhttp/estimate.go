package sdkhttp

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"strings"

	"github.com/pgw-go/pgw/transport"
)

// MinBinaryRun is the shortest run of base64 text in a request body that
// EstimateTokens counts as one image rather than as text.
const MinBinaryRun = 1 << 10

var base64Word = []byte("base64")

// EstimateTokens is the token reservation of a request body of type
// contentType sent through the governed client: about four bytes per token
// of its text, except that each run of base64 text of at least MinBinaryRun
// bytes — an image or a file, sent as a data: URI (OpenAI) or a base64
// source (Anthropic) — counts transport.ImageTokenEstimate, as an image
// part of a ChatRequest does, and not its size: a photo's hundreds of
// kilobytes of base64 are not that many tokens, and would not fit a modest
// TPM. A file sent as it is counts transport.ImageTokenEstimate too: a body
// of an audio, image or video type, application/octet-stream or
// application/pdf, and each file part (one with a file name) of a
// multipart/form-data body, whose other parts count as text. A body that
// does not contain the word "base64" is not scanned for it.
func EstimateTokens(body []byte, contentType string) int64 {
	switch {
	case len(body) == 0:
		return 0
	case hasPrefixFold(contentType, "multipart/"):
		if n, ok := multipartTokens(body, contentType); ok {
			return n
		}
	case binaryType(contentType):
		return transport.ImageTokenEstimate
	}
	return textTokens(body)
}

// textTokens is EstimateTokens of a text body (JSON, form values, text).
func textTokens(body []byte) int64 {
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

// multipartTokens is EstimateTokens of a multipart body: each file part
// one file, each other part its text. ok is false when the body does not
// parse as the multipart body contentType says it is.
func multipartTokens(body []byte, contentType string) (int64, bool) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return 0, false
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var n int64
	for {
		part, err := r.NextRawPart()
		if err == io.EOF {
			return n, true
		}
		if err != nil {
			return 0, false
		}
		if part.FileName() != "" || binaryType(part.Header.Get("Content-Type")) {
			n += transport.ImageTokenEstimate
			continue
		}
		var text bytes.Buffer
		if _, err := io.Copy(&text, part); err != nil {
			return 0, false
		}
		n += textTokens(text.Bytes())
	}
}

// binaryType reports a media type whose body is a file's bytes, not text.
func binaryType(contentType string) bool {
	for _, p := range []string{"audio/", "image/", "video/", "application/octet-stream", "application/pdf"} {
		if hasPrefixFold(contentType, p) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
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
