package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pgw-go/pgw/internal/toolids"
	"github.com/pgw-go/pgw/transport"
)

// reservedKeys are the body keys the transport writes itself; Extra may not
// name them.
var reservedKeys = []string{
	"model", "messages", "system", "max_tokens", "stream", "tools", "tool_choice",
	"stop_sequences", "temperature", "top_p", "metadata",
}

// answerTool is the name of the forced tool that serves a json_object
// response format (a json_schema one uses the schema's name).
const answerTool = "json_answer"

type messagesRequest struct {
	Model         string          `json:"model,omitempty"` // none: the upstream says it is missing
	MaxTokens     int             `json:"max_tokens"`
	System        string          `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *wireToolChoice `json:"tool_choice,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	Metadata      *wireMetadata   `json:"metadata,omitempty"`
	Stream        bool            `json:"stream"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// MarshalJSON writes a message without blocks (only ever the final
// assistant turn: mapMessages refuses any other) with content "", which the
// Messages API takes there; null it rejects everywhere.
func (m wireMessage) MarshalJSON() ([]byte, error) {
	if len(m.Content) == 0 {
		return json.Marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{Role: m.Role})
	}
	type plain wireMessage
	return json.Marshal(plain(m))
}

// wireBlock is a content block of a request: text, image, tool_use or
// tool_result.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *wireImage      `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []wireBlock     `json:"content,omitempty"`
}

type wireImage struct {
	Type      string `json:"type"`
	URL       string `json:"url,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type wireMetadata struct {
	UserID string `json:"user_id"`
}

// ValidateChat reports a request that cannot be sent to src: a field the
// Messages API cannot express, or an Extra key the transport writes.
func (c *Client) ValidateChat(src transport.Source, req transport.ChatRequest) error {
	_, err := messagesBody(src, req)
	return err
}

// unsupported is the error of a field the API cannot express.
func unsupported(src transport.Source, field, problem string) error {
	return &transport.RequestError{Field: field, Problem: problem, Source: src.Name, Provider: src.Provider}
}

// messagesBody maps req onto a streamed Messages request to src, Extra
// merged in; the answer's JSON format, when asked for, is the forced tool
// named by the returned answer (empty otherwise).
func messagesBody(src transport.Source, req transport.ChatRequest) ([]byte, error) {
	b, _, err := buildBody(src, req)
	return b, err
}

func buildBody(src transport.Source, req transport.ChatRequest) (body []byte, answer string, err error) {
	if err := req.Validate(); err != nil {
		return nil, "", err
	}
	if err := transport.ExtraConflict(req.Extra, reservedKeys, src); err != nil {
		return nil, "", err
	}
	if req.Seed != nil {
		return nil, "", unsupported(src, "Seed", "the Messages API has no seed; leave Seed nil for scopes with Anthropic sources")
	}
	if t := req.Temperature; t != nil && *t > 1 {
		return nil, "", unsupported(src, "Temperature", fmt.Sprintf("%v (legal on Anthropic: 0 to 1)", *t))
	}
	if req.Temperature != nil && req.TopP != nil {
		return nil, "", unsupported(src, "TopP", "set together with Temperature (legal on Anthropic: one of the two; its current models answer both with a 400, and its API reference says to alter only one)")
	}
	r := messagesRequest{
		Model:         req.Model,
		MaxTokens:     req.MaxTokens,
		StopSequences: req.Stop,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		Stream:        true,
	}
	if r.Model == "" {
		r.Model = src.Model
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = src.MaxTokens
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = DefaultMaxTokens
	}
	if req.User != "" {
		r.Metadata = &wireMetadata{UserID: req.User}
	}
	if r.System, r.Messages, err = mapMessages(src, req.Messages); err != nil {
		return nil, "", err
	}
	for i, t := range req.Tools {
		if t.Function.Strict {
			return nil, "", unsupported(src, fmt.Sprintf("Tools[%d].Function.Strict", i), "the Messages API does not guarantee schema-exact arguments")
		}
		schema, _ := transport.SchemaJSON(t.Function.Parameters) // checked by Validate
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = append(r.Tools, wireTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	switch tc := req.ToolChoice.(type) {
	case string:
		if len(req.Tools) == 0 {
			break // auto or none without tools: what is meant without the key
		}
		switch tc {
		case transport.ToolChoiceAuto:
			r.ToolChoice = &wireToolChoice{Type: "auto"}
		case transport.ToolChoiceNone:
			r.ToolChoice = &wireToolChoice{Type: "none"}
		case transport.ToolChoiceRequired:
			r.ToolChoice = &wireToolChoice{Type: "any"}
		}
	case transport.ToolChoiceFunction:
		r.ToolChoice = &wireToolChoice{Type: "tool", Name: tc.Name}
	case *transport.ToolChoiceFunction:
		r.ToolChoice = &wireToolChoice{Type: "tool", Name: tc.Name}
	}
	if p := req.ParallelToolCalls; p != nil && !*p {
		if r.ToolChoice == nil {
			r.ToolChoice = &wireToolChoice{Type: "auto"}
		}
		if r.ToolChoice.Type == "none" {
			return nil, "", unsupported(src, "ParallelToolCalls", "set with ToolChoice none")
		}
		r.ToolChoice.DisableParallelToolUse = true
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != transport.FormatText {
		if len(req.Tools) > 0 || req.ToolChoice != nil {
			return nil, "", unsupported(src, "ResponseFormat", "a JSON answer is served by a forced tool on Anthropic, which leaves no room for Tools or ToolChoice")
		}
		answer = answerTool
		schema := json.RawMessage(`{"type":"object"}`)
		desc := "Give the answer as this tool's input."
		if js := rf.JSONSchema; js != nil {
			if js.Strict {
				return nil, "", unsupported(src, "ResponseFormat.JSONSchema.Strict", "the Messages API does not guarantee a schema-exact answer")
			}
			answer = js.Name
			schema, _ = transport.SchemaJSON(js.Schema)
			if js.Description != "" {
				desc = js.Description
			}
		}
		r.Tools = []wireTool{{Name: answer, Description: desc, InputSchema: schema}}
		r.ToolChoice = &wireToolChoice{Type: "tool", Name: answer}
	}
	if len(r.Tools) == 0 {
		if at := toolTurnAt(req.Messages); at != "" {
			return nil, "", unsupported(src, "Tools", "empty while "+at+" (legal on Anthropic: the Tools the conversation called, ToolChoice none to keep the model from calling them; the Messages API refuses tool_use and tool_result blocks in a request without tools, with a 400)")
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, "", fmt.Errorf("anthropic: source %q: encode request: %w", src.Name, err)
	}
	if len(req.Extra) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, "", fmt.Errorf("anthropic: source %q: encode request: %w", src.Name, err)
		}
		for k, v := range req.Extra {
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, "", &transport.RequestError{Field: "Extra[" + k + "]", Problem: "does not encode to JSON: " + err.Error()}
			}
			m[k] = raw
		}
		if b, err = json.Marshal(m); err != nil {
			return nil, "", fmt.Errorf("anthropic: source %q: encode request: %w", src.Name, err)
		}
	}
	return b, answer, nil
}

// toolTurnAt names the first message of msgs that calls a tool or answers
// a call ("Messages[2] calls a tool"), empty when none does.
func toolTurnAt(msgs []transport.Message) string {
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			return fmt.Sprintf("Messages[%d] calls a tool", i)
		case m.Role == transport.RoleTool:
			return fmt.Sprintf("Messages[%d] is a tool result", i)
		}
	}
	return ""
}

// mapMessages turns the chat's messages into the system text and the
// alternating user/assistant turns of the Messages API.
//
// The API takes no empty text block, and no turn without content or with
// whitespace alone, save an empty final assistant turn; consecutive
// messages of one role merge into one turn first, so an empty message next
// to a full one of its role is fine.
func mapMessages(src transport.Source, msgs []transport.Message) (string, []wireMessage, error) {
	var system []string
	var out []wireMessage
	var first []int // the index in msgs of each turn's first message
	add := func(i int, role string, blocks []wireBlock) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, wireMessage{Role: role, Content: blocks})
		first = append(first, i)
	}
	if err := pairedToolTurns(src, msgs); err != nil {
		return "", nil, err
	}
	ids := toolUseIDs(msgs)
	for i, m := range msgs {
		at := fmt.Sprintf("Messages[%d]", i)
		if m.Name != "" {
			return "", nil, unsupported(src, at+".Name", "the Messages API has no participant names")
		}
		blocks, err := contentBlocks(src, at, m)
		if err != nil {
			return "", nil, err
		}
		switch m.Role {
		case transport.RoleSystem, transport.RoleDeveloper:
			var texts []string
			for _, b := range blocks {
				texts = append(texts, b.Text)
			}
			system = append(system, strings.Join(texts, ""))
		case transport.RoleUser:
			add(i, "user", blocks)
		case transport.RoleAssistant:
			for j, tc := range m.ToolCalls {
				input, err := toolInput(tc.Function.Arguments)
				if err != nil {
					return "", nil, unsupported(src, fmt.Sprintf("%s.ToolCalls[%d].Function.Arguments", at, j),
						err.Error()+" (legal on Anthropic: a JSON object, or empty for a call without arguments; the Messages API takes a tool call's input as an object)")
				}
				blocks = append(blocks, wireBlock{Type: "tool_use", ID: ids(tc.ID), Name: tc.Function.Name, Input: input})
			}
			add(i, "assistant", blocks)
		case transport.RoleTool:
			result := wireBlock{Type: "tool_result", ToolUseID: ids(m.ToolCallID), Content: blocks}
			add(i, "user", []wireBlock{result})
		}
	}
	if len(out) == 0 {
		return "", nil, unsupported(src, "Messages", "only system or developer messages (legal on Anthropic: at least one user or assistant message)")
	}
	for k := range out {
		out[k].Content = withoutBlankText(out[k].Content)
	}
	for k, w := range out {
		at := fmt.Sprintf("Messages[%d]", first[k])
		field := at + ".Content"
		if len(msgs[first[k]].Parts) > 0 {
			field = at + ".Parts"
		}
		if len(w.Content) == 0 {
			if k == len(out)-1 && w.Role == "assistant" {
				continue // an empty final assistant turn is legal
			}
			return "", nil, unsupported(src, field, "empty (legal on Anthropic: some text, an image or a tool call; only the final assistant message may be empty)")
		}
		if whitespaceOnly(w.Content) {
			return "", nil, unsupported(src, field, "whitespace only (legal on Anthropic: text with a non-space character, an image or a tool call)")
		}
	}
	return strings.Join(system, "\n\n"), out, nil
}

// pairedToolTurns checks the tool conversation as the Messages API reads
// it once consecutive messages of a role are one turn (tool results are
// user turns): the turn after an assistant turn with tool_use blocks begins
// with a tool_result for each of them, and every tool_result answers a
// tool_use of the assistant turn just before. An assistant turn that asks
// for tools may end the conversation.
func pairedToolTurns(src transport.Source, msgs []transport.Message) error {
	type turn struct {
		assistant bool
		msgs      []int
	}
	var turns []turn
	for i, m := range msgs {
		if m.Role == transport.RoleSystem || m.Role == transport.RoleDeveloper {
			continue
		}
		a := m.Role == transport.RoleAssistant
		if n := len(turns); n > 0 && turns[n-1].assistant == a {
			turns[n-1].msgs = append(turns[n-1].msgs, i)
			continue
		}
		turns = append(turns, turn{assistant: a, msgs: []int{i}})
	}
	for k, t := range turns {
		if t.assistant {
			continue
		}
		asked := map[string]bool{}
		if k > 0 {
			for _, i := range turns[k-1].msgs {
				for _, tc := range msgs[i].ToolCalls {
					asked[tc.ID] = true
				}
			}
		}
		answered := map[string]bool{}
		text := -1 // the first user message of the turn with content
		for _, i := range t.msgs {
			m := msgs[i]
			if m.Role != transport.RoleTool {
				if text < 0 && (m.Content != "" || len(m.Parts) > 0) {
					text = i
				}
				continue
			}
			at := fmt.Sprintf("Messages[%d].ToolCallID", i)
			if !asked[m.ToolCallID] {
				return unsupported(src, at, fmt.Sprintf("%q answers no tool call of the assistant message just before it (legal on Anthropic: the ID of a call that message made)", m.ToolCallID))
			}
			if text >= 0 {
				return unsupported(src, at, fmt.Sprintf("a tool result after the user message Messages[%d] (legal on Anthropic: tool results right after the assistant message that made the calls, before any user message)", text))
			}
			answered[m.ToolCallID] = true
		}
		if k == 0 {
			continue
		}
		for _, i := range turns[k-1].msgs {
			for j, tc := range msgs[i].ToolCalls {
				if !answered[tc.ID] {
					return unsupported(src, fmt.Sprintf("Messages[%d].ToolCalls[%d].ID", i, j),
						fmt.Sprintf("%q has no tool result right after the assistant message (legal on Anthropic: a tool message answering each call, right after the assistant message and before any user message)", tc.ID))
				}
			}
		}
	}
	return nil
}

// toolUseIDs maps the tool-call IDs of msgs to IDs the Messages API takes
// (letters, digits, '_' and '-'). An ID only pairs a call with its result
// within the request, so an ID from another provider with other characters
// ("functions.get_weather:0") is sent with each of them replaced by '_' —
// the same for the call and its result — and, when that is another ID of
// the request, with "_2", "_3", … added, so that no two IDs become one.
// Valid IDs are sent as they are.
func toolUseIDs(msgs []transport.Message) func(string) string {
	return toolids.Map(msgs, validToolUseID, func(id string, n int) string {
		base := strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, id)
		if n == 0 {
			return base
		}
		return fmt.Sprintf("%s_%d", base, n+1)
	})
}

// validToolUseID reports an ID the Messages API takes as a tool_use id.
func validToolUseID(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// withoutBlankText drops the whitespace-only text blocks of a turn that
// has no other text but has other blocks — the "\n" an OpenAI-compatible
// model may write before its tool calls, say. The Messages API answers
// such a block with a 400 ("text content blocks must contain
// non-whitespace text"), and without it the turn says the same. A turn of
// whitespace alone is left as it is (mapMessages refuses it), and so is
// whitespace beside other text, which the API takes.
func withoutBlankText(blocks []wireBlock) []wireBlock {
	blank, other := 0, false
	for _, b := range blocks {
		switch {
		case b.Type != "text":
			other = true
		case strings.TrimSpace(b.Text) == "":
			blank++
		default:
			return blocks // some text: whitespace beside it is taken
		}
	}
	if blank == 0 || !other {
		return blocks
	}
	kept := make([]wireBlock, 0, len(blocks)-blank)
	for _, b := range blocks {
		if b.Type != "text" {
			kept = append(kept, b)
		}
	}
	return kept
}

// whitespaceOnly reports a turn whose blocks are all text with nothing but
// whitespace in them.
func whitespaceOnly(blocks []wireBlock) bool {
	for _, b := range blocks {
		if b.Type != "text" || strings.TrimSpace(b.Text) != "" {
			return false
		}
	}
	return true
}

// contentBlocks are the text and image blocks of a message.
func contentBlocks(src transport.Source, at string, m transport.Message) ([]wireBlock, error) {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil, nil
		}
		return []wireBlock{{Type: "text", Text: m.Content}}, nil
	}
	var blocks []wireBlock
	for j, p := range m.Parts {
		switch p.Type {
		case transport.PartText:
			if p.Text == "" && m.Role != transport.RoleSystem && m.Role != transport.RoleDeveloper { // system text is joined into one string
				return nil, unsupported(src, fmt.Sprintf("%s.Parts[%d].Text", at, j), "empty (legal on Anthropic: non-empty text)")
			}
			blocks = append(blocks, wireBlock{Type: "text", Text: p.Text})
		case transport.PartImageURL:
			pat := fmt.Sprintf("%s.Parts[%d].ImageURL", at, j)
			if d := p.ImageURL.Detail; d != "" && d != "auto" {
				return nil, unsupported(src, pat+".Detail", fmt.Sprintf("%q (legal on Anthropic: auto or empty)", d))
			}
			img, err := imageSource(p.ImageURL.URL)
			if err != nil {
				return nil, unsupported(src, pat+".URL", err.Error())
			}
			blocks = append(blocks, wireBlock{Type: "image", Source: img})
		}
	}
	return blocks, nil
}

// imageSource maps an http(s) URL to a url source and a base64 data: URI of
// an image type the API takes (imageMediaTypes) to a base64 source of that
// type, without the URI's parameters.
func imageSource(u string) (*wireImage, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return &wireImage{Type: "url", URL: u}, nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || mediaType == "" {
		return nil, fmt.Errorf("a data: URI that is not data:<media type>;base64,… (Anthropic takes base64 images only)")
	}
	mt, _, _ := strings.Cut(mediaType, ";") // parameters (name=…, charset=…) are not the API's
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "image/jpg" { // a common misspelling of JPEG's type, which the API refuses
		mt = "image/jpeg"
	}
	if !slices.Contains(imageMediaTypes, mt) {
		return nil, fmt.Errorf("an image of media type %q (legal on Anthropic: %s)", mediaType, strings.Join(imageMediaTypes, ", "))
	}
	return &wireImage{Type: "base64", MediaType: mt, Data: data}, nil
}

// imageMediaTypes are the media types of the base64 images the Messages API
// takes.
var imageMediaTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// toolInput is a tool call's arguments as the JSON object Anthropic takes:
// empty arguments (or whitespace only), which is what a model that called a
// tool without arguments may have streamed, are the empty object. Anything
// else that is not a JSON object — malformed JSON, an array, a string, a
// number, null — cannot be sent: rewriting it would change what the model
// said in the history, so it is an error saying what the text is.
func toolInput(args string) (json.RawMessage, error) {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var v any
	if err := json.Unmarshal(a, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON")
	}
	switch v.(type) {
	case map[string]any:
		return json.RawMessage(a), nil
	case []any:
		return nil, fmt.Errorf("a JSON array, not an object")
	case string:
		return nil, fmt.Errorf("a JSON string, not an object")
	case nil:
		return nil, fmt.Errorf("JSON null, not an object")
	case bool:
		return nil, fmt.Errorf("a JSON boolean, not an object")
	default:
		return nil, fmt.Errorf("a JSON number, not an object")
	}
}
