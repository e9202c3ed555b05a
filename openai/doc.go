// Package openai holds pgw's default transports: chat completions with SSE
// streaming, embeddings, and OCR as a vision chat request, spoken to any
// OpenAI-compatible HTTP API with net/http alone. One *Client implements
// transport.ChatTransport, transport.EmbedTransport and
// transport.OCRTransport.
//
// # Base URL
//
// Source.BaseURL includes the API version, as in the OpenAI SDKs' base_url:
// "https://api.openai.com/v1", "http://localhost:8000/v1". The client appends
// "/chat/completions" or "/embeddings" to it (a trailing slash is ignored),
// so a proxy that serves the API under another prefix works unchanged.
//
// # Timeouts and cancellation
//
// The client sets no timeout of its own: a streamed answer may legitimately
// run for minutes. The caller bounds each attempt through ctx — the gateway
// derives it from the source's Timeout (and its first-token timeout for
// chat) — and a cancelled or expired ctx is returned as is (ctx.Err(), so
// errors.Is(err, context.DeadlineExceeded) holds), from the request and from
// ChatStream.Recv alike. The default http.Client bounds only connection set-up
// (dial, TLS handshake) and keeps idle connections for reuse.
//
// # Errors
//
// A non-2xx answer becomes *errs.HTTPError (pgw.HTTPError) carrying the
// status, the upstream's Retry-After (or retry-after-ms) and the upstream's
// error message, so the gateway classifies it: 429 throttles, 5xx
// fails over, 401/403 are fatal, 400/404/413/422 go back to the caller. The
// OpenAI error code, when present and not already in the text, is appended in
// parentheses, e.g. "You exceeded your current quota (insufficient_quota)".
// A stream that ends before "data: [DONE]" and before any finish_reason is
// reported as a *StreamCutError (errors.Is ErrStreamCut and
// io.ErrUnexpectedEOF), an ordinary failure — never a silent io.EOF. Any other
// failure (connection refused, malformed body) is a plain wrapped error.
//
// The source's API key is sent only in the Authorization header. It is never
// logged, and every message taken from an upstream answer has it redacted.
package openai
