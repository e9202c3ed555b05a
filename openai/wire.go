package openai

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/pgw-go/pgw/internal/toolids"
	"github.com/pgw-go/pgw/transport"
)

// reservedKeys are the body keys the transport writes itself; Extra may not
// name them.
var reservedKeys = []string{
	"model", "messages", "stream", "stream_options", "max_tokens", "temperature", "top_p",
	"stop", "seed", "tools", "tool_choice", "parallel_tool_calls", "response_format", "user",
}

// chatRequest is the body of POST /chat/completions, in OpenAI's names.
type chatRequest struct {
	Model               string              `json:"model,omitempty"`
	Messages            []wireMessage       `json:"messages"`
	Stream              bool                `json:"stream"`
	StreamOptions       *streamOptions      `json:"stream_options,omitempty"`
	MaxTokens           int                 `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                 `json:"max_completion_tokens,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	TopP                *float64            `json:"top_p,omitempty"`
	Stop                []string            `json:"stop,omitempty"`
	Seed                *int                `json:"seed,omitempty"`
	RandomSeed          *int                `json:"random_seed,omitempty"` // Seed, as Mistral's own API names it
	Tools               []wireTool          `json:"tools,omitempty"`
	ToolChoice          any                 `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool               `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *wireResponseFormat `json:"response_format,omitempty"`
	User                string              `json:"user,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage is one message. Content is a string, an array of parts, or
// null (an assistant message that only calls tools).
type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wirePart struct {
	Type     string              `json:"type"`
	Text     string              `json:"text,omitempty"`
	ImageURL *transport.ImageURL `json:"image_url,omitempty"`
}

// MarshalJSON writes a text part with its "text" key even when the text is
// empty: the API requires the key in every text part.
func (p wirePart) MarshalJSON() ([]byte, error) {
	if p.Type == transport.PartText {
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{p.Type, p.Text})
	}
	type plain wirePart
	return json.Marshal(plain(p))
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type wireNamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type wireResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *wireJSONSchema `json:"json_schema,omitempty"`
}

type wireJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      bool            `json:"strict,omitempty"`
}

// ValidateChat reports a request that this transport cannot send to src: an
// Extra key that the transport writes itself, or, to Mistral's own API, a
// field it refuses (User; Name on a message other than a tool result; a
// user message right after a tool result).
// Every other modelled field is OpenAI's own.
func (c *Client) ValidateChat(src transport.Source, req transport.ChatRequest) error {
	return unsendable(src, req)
}

// unsendable reports a request that chatBody cannot send to src: an
// Extra key it writes itself (one of reservedKeys, or random_seed when req
// sets Seed for Mistral's own API, which names the seed so; without a Seed,
// random_seed in Extra is Extra's to add), or a field Mistral's own API has
// no place for (mistralProblem).
func unsendable(src transport.Source, req transport.ChatRequest) error {
	if err := transport.ExtraConflict(req.Extra, reservedKeys, src); err != nil {
		return err
	}
	if !isMistral(baseHost(src.BaseURL)) {
		return nil
	}
	if err := mistralProblem(src, req); err != nil {
		return err
	}
	if req.Seed != nil {
		return transport.ExtraConflict(req.Extra, mistralSeed, src)
	}
	return nil
}

// mistralProblem reports a field of req that Mistral's own API has no
// place for and refuses with a 422 (it answers every key it does not know
// so): the end user (User), and a participant's name on any message but a
// tool result, which it names by its function; and a conversation order it
// refuses with a 400: a user message right after a tool result, where it
// wants the assistant's answer to the results first.
func mistralProblem(src transport.Source, req transport.ChatRequest) error {
	if req.User != "" {
		return &transport.RequestError{
			Field:    "User",
			Problem:  "Mistral's own API has no end-user field and refuses one with a 422; leave User empty for scopes with a source on mistral.ai",
			Source:   src.Name,
			Provider: src.Provider,
		}
	}
	for i, m := range req.Messages {
		if m.Name != "" && m.Role != transport.RoleTool {
			return &transport.RequestError{
				Field:    fmt.Sprintf("Messages[%d].Name", i),
				Problem:  "Mistral's own API names only tool results, and refuses a participant's name with a 422; leave Name empty for scopes with a source on mistral.ai",
				Source:   src.Name,
				Provider: src.Provider,
			}
		}
		if i > 0 && m.Role == transport.RoleUser && req.Messages[i-1].Role == transport.RoleTool {
			return &transport.RequestError{
				Field:    fmt.Sprintf("Messages[%d].Role", i),
				Problem:  fmt.Sprintf("a user message right after the tool result Messages[%d], which Mistral's own API refuses with a 400 (legal there: the assistant's answer to the tool results before the next user message)", i-1),
				Source:   src.Name,
				Provider: src.Provider,
			}
		}
	}
	return nil
}

// mistralSeed is the key of Seed in Mistral's own API.
var mistralSeed = []string{"random_seed"}

var _ transport.ChatValidator = (*Client)(nil)

// chatBody is the JSON body of a streamed chat request to src, Extra merged
// in.
func chatBody(src transport.Source, req transport.ChatRequest) ([]byte, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := unsendable(src, req); err != nil {
		return nil, err
	}
	model := req.Model
	if model == "" {
		model = src.Model
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = src.MaxTokens
	}
	body := chatRequest{
		Model:             model,
		Stream:            true,
		Temperature:       req.Temperature,
		TopP:              req.TopP,
		Stop:              req.Stop,
		ParallelToolCalls: req.ParallelToolCalls,
		User:              req.User,
	}
	host := baseHost(src.BaseURL)
	if isMistral(host) {
		body.Messages = wireMessages(req.Messages, mistralToolCallIDs(req.Messages))
		for i := range body.Messages {
			if body.Messages[i].Role == transport.RoleDeveloper {
				body.Messages[i].Role = transport.RoleSystem // the developer's instructions, in the role Mistral has for them
			}
		}
		body.RandomSeed = req.Seed
	} else {
		body.Messages = wireMessages(req.Messages, sameID)
		body.StreamOptions = &streamOptions{IncludeUsage: true}
		body.Seed = req.Seed
	}
	if _, named := req.Extra[maxCompletionTokens]; !named {
		body.limitAnswer(host, maxTokens)
	}
	for _, t := range req.Tools {
		params, _ := transport.SchemaJSON(t.Function.Parameters) // checked by Validate
		body.Tools = append(body.Tools, wireTool{Type: transport.ToolTypeFunction, Function: wireFunctionDef{
			Name: t.Function.Name, Description: t.Function.Description, Parameters: params, Strict: t.Function.Strict,
		}})
	}
	switch tc := req.ToolChoice.(type) {
	case string:
		if len(req.Tools) > 0 { // auto or none without tools: the default, and a 400 if sent
			body.ToolChoice = tc
		}
	case transport.ToolChoiceFunction:
		body.ToolChoice = namedChoice(tc.Name)
	case *transport.ToolChoiceFunction:
		body.ToolChoice = namedChoice(tc.Name)
	}
	if rf := req.ResponseFormat; rf != nil {
		body.ResponseFormat = &wireResponseFormat{Type: rf.Type}
		if js := rf.JSONSchema; js != nil {
			schema, _ := transport.SchemaJSON(js.Schema)
			body.ResponseFormat.JSONSchema = &wireJSONSchema{Name: js.Name, Description: js.Description, Schema: schema, Strict: js.Strict}
		}
	}
	return withExtra(src, body, req.Extra)
}

// limitAnswer sets the answer's limit n (0: none sent) in the key host
// takes: max_completion_tokens on OpenAI's own API, max_tokens elsewhere.
func (b *chatRequest) limitAnswer(host string, n int) {
	if isOpenAI(host) {
		b.MaxCompletionTokens = n
	} else {
		b.MaxTokens = n
	}
}

// maxCompletionTokens is OpenAI's name for the answer's limit, which
// replaces max_tokens.
const maxCompletionTokens = "max_completion_tokens"

// baseHost is the lower-case host name of baseURL, without port or final
// dot; "" when it does not parse.
func baseHost(baseURL string) string {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// isOpenAI reports whether host is OpenAI's own API (api.openai.com, or a
// regional host under it such as eu.api.openai.com), where the answer's
// limit is sent as max_completion_tokens: OpenAI deprecates max_tokens for
// chat completions and its reasoning models (the o-series, gpt-5) reject
// it, while it takes max_completion_tokens for every chat model. Every
// other host gets max_tokens, the one name that OpenAI-compatible servers
// (vLLM, Ollama, Groq, LiteLLM, Azure's older api-versions) all know.
func isOpenAI(host string) bool {
	return host == "api.openai.com" || strings.HasSuffix(host, ".api.openai.com")
}

// isMistral reports whether host is Mistral's own API (api.mistral.ai,
// codestral.mistral.ai), which answers an unknown body key with a 422 —
// stream_options, seed (it names the seed random_seed), user, and name on
// any message but a tool result among them — takes only tool-call IDs of
// nine letters and digits (mistralToolCallIDs), knows no developer role
// (such a message is sent as a system message), and reports usage in the
// last chunk of every stream without being asked.
func isMistral(host string) bool {
	return host == "mistral.ai" || strings.HasSuffix(host, ".mistral.ai")
}

// withExtra encodes body and adds the keys of extra to it.
func withExtra(src transport.Source, body any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai: source %q: encode request: %w", src.Name, err)
	}
	if len(extra) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("openai: source %q: encode request: %w", src.Name, err)
	}
	for k, v := range extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, &transport.RequestError{Field: "Extra[" + k + "]", Problem: "does not encode to JSON: " + err.Error()}
		}
		m[k] = raw
	}
	return json.Marshal(m)
}

func namedChoice(name string) wireNamedChoice {
	c := wireNamedChoice{Type: transport.ToolTypeFunction}
	c.Function.Name = name
	return c
}

// sameID sends a tool-call ID as it is.
func sameID(id string) string { return id }

// mistralToolCallIDs maps the tool-call IDs of msgs to IDs Mistral's own
// API takes: it answers any other than nine ASCII letters and digits with a
// 400, and other providers write IDs such as "call_abc123" or
// "toolu_01A…". An ID only pairs a call with its result within the
// request, so an ID Mistral does not take is sent as nine letters and
// digits derived from it — the same for the call and its result, and
// distinct from every other ID of the request. IDs Mistral takes (its own)
// are sent as they are.
func mistralToolCallIDs(msgs []transport.Message) func(string) string {
	return toolids.Map(msgs, mistralToolCallID, func(id string, n int) string {
		return base62ID(fmt.Sprintf("%s\x00%d", id, n))
	})
}

// mistralToolCallID reports an ID Mistral's own API takes: nine ASCII
// letters and digits.
func mistralToolCallID(id string) bool {
	if len(id) != 9 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// base62ID is nine letters and digits drawn from the SHA-256 of s.
func base62ID(s string) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	sum := sha256.Sum256([]byte(s))
	out := make([]byte, 9)
	for i := range out {
		out[i] = digits[int(sum[i])%len(digits)]
	}
	return string(out)
}

// wireMessages maps messages to OpenAI's form, each tool-call ID through
// id; Validate has checked them.
func wireMessages(msgs []transport.Message, id func(string) string) []wireMessage {
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		w := wireMessage{Role: m.Role, Name: m.Name}
		if m.ToolCallID != "" {
			w.ToolCallID = id(m.ToolCallID)
		}
		switch {
		case len(m.Parts) > 0:
			parts := make([]wirePart, len(m.Parts))
			for i, p := range m.Parts {
				parts[i] = wirePart{Type: p.Type, Text: p.Text, ImageURL: p.ImageURL}
			}
			w.Content = parts
		case m.Content == "" && len(m.ToolCalls) > 0:
			w.Content = nil // an assistant turn that only calls tools
		default:
			w.Content = m.Content
		}
		for _, tc := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, wireToolCall{
				ID: id(tc.ID), Type: transport.ToolTypeFunction,
				Function: wireFunction{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
			})
		}
		out = append(out, w)
	}
	return out
}
