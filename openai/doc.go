// Package openai holds pgw's default transports: chat completions with SSE
// streaming, embeddings, and OCR as a vision chat request, spoken to any
// OpenAI-compatible HTTP API with net/http alone. One *Client implements
// transport.ChatTransport, transport.EmbedTransport and
// transport.OCRTransport.
//
// # Chat requests
//
// ChatStream sends every field of transport.ChatRequest under OpenAI's name:
// messages with string content or content parts (text, image_url with its
// detail), assistant tool_calls and tool results (tool_call_id), tools,
// tool_choice, parallel_tool_calls, response_format (json_object,
// json_schema), stop, seed, top_p, user, the answer's limit (MaxTokens, or
// the source's MAX_TOKENS when the request sets none) and temperature, plus
// the keys of Extra; an Extra key the client writes itself is a
// *transport.RequestError before anything is sent. It asks for a stream
// with include_usage (except of Mistral's own API, a host under mistral.ai,
// which refuses stream_options with a 422 and sends usage in the last chunk
// unasked; it gets the seed as random_seed, its own name, where a seed key
// would be refused too, and a request with User, with Name on a message
// other than a tool result, or with a user message right after a tool
// result, is a *transport.RequestError for it, as it refuses all three;
// tool-call IDs it would refuse, other providers' call_… and toolu_…, go to
// it as nine letters and digits derived from each, paired as written, and a
// developer message, a role it does not know, goes as a system message) and
// turns each chunk's content, refusal and tool_calls pieces
// into ChatChunks; usage carries cached prompt and reasoning tokens when
// reported. Content, streamed or not, is a string or an array of parts, as
// some compatible servers send it (Mistral's reasoning models): the text
// parts are the answer, concatenated; thinking, reference and other parts
// are not. A tool call's arguments are returned as the model wrote them,
// valid JSON or not.
//
// The limit goes as max_completion_tokens to OpenAI's own API (a BASE_URL
// whose host is api.openai.com or a regional host under it, such as
// eu.api.openai.com): OpenAI deprecates max_tokens for chat completions and
// its reasoning models (the o-series, gpt-5) answer it with a 400, while
// max_completion_tokens is taken by every OpenAI chat model. Every other
// host gets max_tokens, the name OpenAI-compatible servers (vLLM, Ollama,
// Groq, Mistral, LiteLLM proxies, Azure's older api-versions) all know. A
// request whose Extra names "max_completion_tokens" (a reasoning deployment
// on Azure, a proxy in front of OpenAI) has that key sent as given and no
// max_tokens, whatever the host. The gateway's token estimate counts
// MaxTokens, not Extra: set MaxTokens too.
//
// # Base URL
//
// Source.BaseURL includes the API version, as in the OpenAI SDKs' base_url:
// "https://api.openai.com/v1", "http://localhost:8000/v1". The client joins
// "/chat/completions" or "/embeddings" onto its path (a trailing slash is
// ignored) and keeps its query (Azure's api-version), so a proxy that serves
// the API under another prefix works unchanged.
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
// A non-2xx answer becomes *transport.HTTPError (pgw.HTTPError) carrying the
// status, the upstream's Retry-After (or retry-after-ms) and the upstream's
// error message, so the gateway classifies it: 429 throttles, 5xx
// fails over, 401/402/403 are fatal, 400/404/413/422 go back to the caller. The
// OpenAI error code, when present and not already in the text, is appended in
// parentheses, e.g. "You exceeded your current quota (insufficient_quota)".
// One whose code or type says the quota or credit is spent
// (provider.ErrorBody.InsufficientQuota) is fatal whatever its status, and
// so is an *UpstreamError that says it inside a 2xx answer. An
// *UpstreamError is otherwise classed by the status its code or type stands
// for (provider.ErrorBody.Status), as the gateway's http client classes the
// same error: invalid_api_key is as fatal in a 200 answer as in a 401.
// A stream that ends before "data: [DONE]" and before any finish_reason is
// reported as a *StreamCutError (errors.Is ErrStreamCut and
// io.ErrUnexpectedEOF), an ordinary failure — never a silent io.EOF. Any other
// failure (connection refused, malformed body) is a plain wrapped error.
//
// The source's API key is sent only in its provider's credential header
// (Authorization: Bearer, or api-key for PROVIDER=azure). It is never
// logged, and every message taken from an upstream answer has it redacted.
package openai
