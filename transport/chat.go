package transport

// The roles of chat messages.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message, in the shape of OpenAI's chat API.
//
// A message carries its text either as Content or as Parts (text and image
// parts), not both. An assistant message that asked for tools lists them in
// ToolCalls; the answer to one tool call is a message with Role "tool",
// ToolCallID naming the call and the result in Content.
type Message struct {
	// Role is "system", "developer", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the message's text.
	Content string `json:"content"`
	// Parts, when set instead of Content, are the message's text and image
	// parts, in order.
	Parts []ContentPart `json:"parts,omitempty"`
	// ToolCalls are the tools an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is an optional name of the participant (OpenAI only).
	Name string `json:"name,omitempty"`
}

// The types of content parts.
const (
	PartText     = "text"
	PartImageURL = "image_url"
)

// ContentPart is one part of a message: text, or an image given by URL.
type ContentPart struct {
	// Type is PartText or PartImageURL.
	Type string `json:"type"`
	// Text is the text of a PartText part.
	Text string `json:"text,omitempty"`
	// ImageURL is the image of a PartImageURL part.
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image part's picture: an http(s) URL or a data: URI
// ("data:image/png;base64,…").
type ImageURL struct {
	// URL is the image's address or its data: URI.
	URL string `json:"url"`
	// Detail is "auto", "low" or "high"; empty means the provider's default.
	// Providers other than OpenAI accept only empty or "auto".
	Detail string `json:"detail,omitempty"`
}

// TextPart returns a text part.
func TextPart(text string) ContentPart { return ContentPart{Type: PartText, Text: text} }

// ImagePart returns an image part for url (an http(s) URL or a data: URI)
// with detail ("" for the provider's default).
func ImagePart(url, detail string) ContentPart {
	return ContentPart{Type: PartImageURL, ImageURL: &ImageURL{URL: url, Detail: detail}}
}

// ToolTypeFunction is the only tool type: a function the caller runs.
const ToolTypeFunction = "function"

// ToolCall is a tool an assistant message asked for.
type ToolCall struct {
	// ID names the call; the "tool" message that answers it repeats it.
	ID string `json:"id"`
	// Type is "function" (empty means "function").
	Type string `json:"type"`
	// Function is the function to call and its arguments.
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call names and the arguments the
// model wrote for it.
type FunctionCall struct {
	// Name is the function's name, one of the request's Tools.
	Name string `json:"name"`
	// Arguments is the model's JSON text, exactly as it was received: it may
	// be malformed, and callers must validate it.
	Arguments string `json:"arguments"`
}

// Tool is a function the model may ask the caller to run.
type Tool struct {
	// Type is "function" (empty means "function").
	Type string `json:"type"`
	// Function describes the function.
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition describes a function offered as a tool.
type FunctionDefinition struct {
	// Name is the function's name: letters, digits, '_' and '-', at most 64.
	Name string `json:"name"`
	// Description tells the model what the function does and when to call
	// it.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments, as any value that
	// encodes to a JSON object (a map, a struct, a json.RawMessage); nil —
	// or a nil map or json.RawMessage, JSON null, empty text — means a
	// function without arguments.
	Parameters any `json:"parameters,omitempty"`
	// Strict asks the provider to guarantee arguments that match the
	// schema exactly (OpenAI only).
	Strict bool `json:"strict,omitempty"`
}

// FunctionTool returns a function tool.
func FunctionTool(name, description string, parameters any) Tool {
	return Tool{Type: ToolTypeFunction, Function: FunctionDefinition{Name: name, Description: description, Parameters: parameters}}
}

// The tool choices given by name, for ChatRequest.ToolChoice.
const (
	// ToolChoiceAuto lets the model decide (the default when tools are
	// offered).
	ToolChoiceAuto = "auto"
	// ToolChoiceNone forbids tool calls.
	ToolChoiceNone = "none"
	// ToolChoiceRequired makes the model call at least one tool.
	ToolChoiceRequired = "required"
)

// ToolChoiceFunction, as ChatRequest.ToolChoice, makes the model call the
// named function.
type ToolChoiceFunction struct {
	// Name is the function to call, one of the request's Tools.
	Name string
}

// The response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat asks for the answer's shape: free text, any JSON object, or
// JSON that matches a schema.
type ResponseFormat struct {
	// Type is FormatText, FormatJSONObject or FormatJSONSchema.
	Type string
	// JSONSchema is the schema of a FormatJSONSchema answer.
	JSONSchema *JSONSchema
}

// JSONSchema is the schema a structured answer must match.
type JSONSchema struct {
	// Name names the schema: letters, digits, '_' and '-', at most 64.
	Name string
	// Description tells the model what the answer is for.
	Description string
	// Schema is the JSON schema, as any value that encodes to a JSON
	// object.
	Schema any
	// Strict asks the provider to guarantee an answer that matches the
	// schema exactly (OpenAI only).
	Strict bool
}

// ChatRequest is a chat completion request. Model, when empty, is the
// source's configured model. Optional fields left at their zero value are
// not sent, so the provider's defaults apply.
//
// A field that the provider of a source cannot express is an error before
// any attempt (a *RequestError naming the field and the source), never
// dropped: a scope that fails over between providers fails such a request
// up front.
type ChatRequest struct {
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Model names the model to ask; empty means the source's model.
	Model string
	// MaxTokens bounds the answer; 0 means the source's MAX_TOKENS, else the
	// provider's default (providers that require a bound get a documented
	// one). The OpenAI-compatible transport sends it as
	// max_completion_tokens to OpenAI's own API (api.openai.com) and as
	// max_tokens to every other host; an Extra "max_completion_tokens" is
	// sent instead of it, on any host.
	MaxTokens int
	// Temperature is the sampling temperature, in [0, 2] (Anthropic
	// sources accept [0, 1]).
	Temperature *float64
	// TopP is nucleus sampling's probability mass, in [0, 1]. Anthropic
	// sources take Temperature or TopP, not both.
	TopP *float64
	// Stop lists sequences at which the answer ends.
	Stop []string
	// Seed asks for deterministic sampling (OpenAI's wire: seed, or
	// random_seed to Mistral's own API; Anthropic has none).
	Seed *int
	// Tools are the functions the model may call.
	Tools []Tool
	// ToolChoice is nil (the provider's default), one of ToolChoiceAuto,
	// ToolChoiceNone, ToolChoiceRequired (a string), or a
	// ToolChoiceFunction naming the function to call. Without Tools, auto
	// and none are what the provider does anyway and are not sent (OpenAI
	// answers a tool_choice without tools with a 400); required and a
	// ToolChoiceFunction are errors.
	ToolChoice any
	// ParallelToolCalls, when set, allows (true) or forbids (false) more
	// than one tool call per answer.
	ParallelToolCalls *bool
	// ResponseFormat asks for plain text, a JSON object or JSON matching a
	// schema; nil means text.
	ResponseFormat *ResponseFormat
	// User identifies the end user to the provider (abuse monitoring;
	// Mistral's own API has no such field, and a request setting it to a
	// source there is a *RequestError).
	User string
	// Extra holds provider fields pgw does not model, merged into the
	// request body as top-level keys. Extra only adds: a key that pgw
	// writes itself (model, messages, stream, tools, …, see the provider's
	// transport) is an error before any attempt, never a silent override,
	// and so is "n" other than 1: a response carries one choice. The one
	// key that replaces a modelled field is "max_completion_tokens" on an
	// OpenAI-compatible source: the answer's limit under OpenAI's new name,
	// sent instead of MaxTokens (which the quota estimate still counts).
	Extra map[string]any
	// EstTokens is the caller's estimate for quota reservation; 0 lets the
	// gateway estimate from everything the request sends (EstimateTokens).
	EstTokens int
}

// ToolCallDelta is a piece of one tool call in a streamed answer. The
// pieces of a call share its Index; ID and Name come with the first piece,
// and Arguments is a fragment of the arguments' JSON text, to be
// concatenated in order.
type ToolCallDelta struct {
	// Index tells the answer's tool calls apart (0, 1, …).
	Index int
	// ID is the call's ID, on its first piece.
	ID string
	// Name is the function's name, on its first piece.
	Name string
	// Arguments is the next fragment of the arguments' JSON text.
	Arguments string
}

// ChatChunk is one piece of a streamed answer.
type ChatChunk struct {
	// Delta is the text added by this chunk.
	Delta string
	// ToolCalls are the tool-call pieces this chunk carries.
	ToolCalls []ToolCallDelta
	// Refusal is text added to the model's refusal, when it refuses.
	Refusal string
	// FinishReason is set on the last chunk ("stop", "length",
	// "tool_calls", "content_filter").
	FinishReason string
	// Usage is set when the upstream reports it (usually the last chunk).
	Usage *Usage
}

// HasContent reports whether the chunk carries part of the answer — text, a
// refusal or a tool-call piece — rather than only a role, a finish reason or
// usage.
func (c ChatChunk) HasContent() bool {
	return c.Delta != "" || c.Refusal != "" || len(c.ToolCalls) > 0
}

// ChatStream yields chunks until io.EOF. Close must be called.
//
// A transport's stream returns io.EOF only after the upstream's own end of
// answer (OpenAI's "data: [DONE]", Anthropic's message_stop, or a finish
// reason); a body that ends before it is an error, so that a truncated
// answer is never taken for a whole one.
type ChatStream interface {
	// Recv returns the next chunk, io.EOF at the end, or an error.
	Recv() (ChatChunk, error)
	// Close releases the stream; safe to call more than once.
	Close() error
}

// ChatResponse is a collected chat answer.
type ChatResponse struct {
	// Content is the answer's text, the chunks' Delta concatenated.
	Content string
	// ToolCalls are the tools the model asked for, assembled from the
	// stream's pieces, in Index order.
	ToolCalls []ToolCall
	// FinishReason is why the answer ended, as the last chunk said
	// ("stop", "length", "tool_calls", "content_filter").
	FinishReason string
	// Refusal is the model's refusal text, when it refused.
	Refusal string
	// Usage is the token usage the upstream reported; zero when it
	// reported none.
	Usage Usage
	// Source is the name of the source that answered.
	Source string
}

// EventCounter is implemented by chat streams that skip event types they do
// not know (a provider's newer events) instead of failing: UnknownEvents
// returns how many they skipped so far.
type EventCounter interface {
	// UnknownEvents returns how many events the stream has skipped so far
	// because it did not know their type.
	UnknownEvents() int
}
