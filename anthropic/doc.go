// Package anthropic is the chat transport for Anthropic's Messages API, with
// net/http alone. It maps the gateway's ChatRequest — which uses OpenAI's
// shapes — onto POST {BASE_URL}/messages and streams the answer back as the
// same ChatChunks the OpenAI-compatible transport yields, so that one scope
// can list an OpenAI-compatible primary and an Anthropic backup and fail
// over between them with tools intact.
//
// # Source settings
//
// PROVIDER=anthropic; BASE_URL includes the version path
// (https://api.anthropic.com/v1); API_KEY is sent as x-api-key, with
// anthropic-version: 2023-06-01 (provider.AnthropicVersion). MODEL is the
// model of requests that name none; the Messages API requires one, and a
// request with neither is sent without a "model" key, for the upstream to
// say so.
//
// # Mapping
//
//   - system and developer messages become the top-level "system" text, in
//     order;
//   - user and assistant messages become content blocks: text, images
//     (an http(s) URL as a "url" source, a data: URI as a "base64" one), the
//     assistant's tool calls as "tool_use" blocks (their input is the
//     arguments' JSON object; empty or whitespace-only arguments, as a model
//     that called a tool without arguments may stream them, are the empty
//     object {}); "tool" messages become "tool_result" blocks of a user
//     turn; consecutive turns of the same role are merged, as the API
//     requires; a tool-call ID with characters other than letters, digits,
//     '_' and '-' (as other providers write them: "functions.f:0") is sent
//     with each replaced by '_', the same in the call and its result, made
//     unique within the request; whitespace-only text beside tool calls,
//     images or tool results and no other text (the "\n\n" a model may
//     write before its tool calls) is not sent, since the API refuses a
//     text block of whitespace alone;
//   - Tools become tools with "input_schema"; ToolChoice auto, none,
//     required and a named function become auto, none, any and tool;
//     ParallelToolCalls=false becomes disable_parallel_tool_use;
//   - Stop becomes stop_sequences, User metadata.user_id;
//   - MaxTokens is required by the API: a request without one sends the
//     source's MAX_TOKENS, else DefaultMaxTokens;
//   - ResponseFormat json_object and json_schema are served by one forced
//     tool whose input schema is the answer's schema; the tool's input is
//     returned as the answer's text, so the caller sees JSON content as from
//     OpenAI.
//
// A field the API cannot express — Seed, Strict on a tool or a schema, an
// image Detail other than auto, a data: image of a media type other than
// image/jpeg, image/png, image/gif and image/webp, a message Name, a
// Temperature above 1, a TopP together with a Temperature, a response
// format together with Tools, an Extra key the transport writes —
// and a request the API rejects — a message without content (save an empty
// final assistant one), an empty text part, only system messages, tool-call
// arguments that are not a JSON object (malformed JSON, an array, a string,
// a number, null: pgw does not rewrite what the model said), a tool result
// that answers no call of the assistant message just before it or that
// comes after a user message of its turn, a tool call with no result right
// after its assistant message (a final assistant message may ask for tools),
// a tool call or tool result in a request without Tools —
// is a *transport.RequestError naming the field and the source, returned by
// ValidateChat (the gateway checks every source before the first attempt)
// and by ChatStream before anything is sent.
//
// # Stream
//
// message_start, content_block_start, content_block_delta (text_delta,
// input_json_delta), message_delta and message_stop become ChatChunks: text
// as Delta, tool_use blocks as ToolCalls (numbered from 0 in the order they
// start), the stop reason as FinishReason (end_turn and stop_sequence →
// "stop", max_tokens → "length", tool_use → "tool_calls", refusal →
// "content_filter"), and the usage of message_start and message_delta
// together on the last chunk. ping events are skipped; event types the
// transport does not know are ignored and counted (UnknownEvents). A body
// that ends before message_stop and before the stop reason is a
// *StreamCutError; an error event, or a 200 JSON answer that is an error
// ({"type": "error", "error": {…}}), is a
// *transport.HTTPError with the status its error type stands for (529 for
// overloaded_error, 429 for rate_limit_error, 402 for billing_error, 401
// for authentication_error, 403 for permission_error, …;
// provider.ErrorBody.Status, the table the gateway's http client uses), so
// it is classified like the same error sent as a status; one whose type
// says the credit is spent (credit_balance_too_low) is fatal, as it is sent
// as a status.
//
// # OCR
//
// The client is also an OCRTransport: the image is sent as a base64 block
// with the prompt, and the streamed answer collected.
//
// # Errors
//
// A non-2xx answer is a *transport.HTTPError: 529 overloaded_error is an ordinary
// failure (the call fails over), 429 carries retry-after, and one whose type
// says the credit is spent (credit_balance_too_low) is fatal whatever its
// status.
package anthropic
