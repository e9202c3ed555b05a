package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/pgw-go/pgw/config"
)

// CodeRequest is the code of RequestError.
const CodeRequest = "PGW-REQUEST"

// RequestError is a request that cannot be sent: a field with an illegal
// value, or one that the provider of a source cannot express. The gateway
// returns it before admission — no quota permit, no attempt, nothing
// recorded against a source, nothing sent — and never retries it.
type RequestError struct {
	// Request is the kind of request: "chat" (also when empty),
	// "embedding" or "OCR".
	Request string
	// Field is the request field at fault, as a Go path
	// ("Messages[2].Parts[0].ImageURL.URL", "Seed", "Extra[model]",
	// "Inputs", "pages[3].Image").
	Field string
	// Problem says what is wrong and what is legal.
	Problem string
	// Source names the source whose provider cannot express the field;
	// empty when the value is illegal everywhere.
	Source string
	// Provider is that source's provider; empty with Source.
	Provider config.Provider
}

// Error implements the error interface.
func (e *RequestError) Error() string {
	kind := e.Request
	if kind == "" {
		kind = "chat"
	}
	if e.Source != "" {
		return fmt.Sprintf("pgw: %s request field %s cannot be sent to source %q (provider %s): %s", kind, e.Field, e.Source, e.Provider, e.Problem)
	}
	return fmt.Sprintf("pgw: %s request field %s: %s", kind, e.Field, e.Problem)
}

// Code returns CodeRequest.
func (e *RequestError) Code() string { return CodeRequest }

// ChatValidator is implemented by chat transports that can tell, before any
// attempt, whether a request can be sent to a source. The gateway checks
// every source of the scope first, so that a request one fail-over target
// could not carry fails at once instead of half-way through a call.
type ChatValidator interface {
	// ValidateChat returns a *RequestError when req cannot be sent to src.
	ValidateChat(src Source, req ChatRequest) error
}

// Validate checks what is illegal whatever the provider: no messages,
// unknown roles and part types, empty image URLs, tool calls outside
// assistant messages, tool results without their call's ID, unnamed or
// badly named tools, ParallelToolCalls without Tools, an unknown tool
// choice, "required" without Tools, a ToolChoiceFunction naming a function
// that is not one of Tools, an unknown response format, and out-of-range
// sampling values.
func (r ChatRequest) Validate() error {
	bad := func(field, problem string) error { return &RequestError{Field: field, Problem: problem} }
	if len(r.Messages) == 0 {
		return bad("Messages", "empty (legal: at least one message)")
	}
	for i, m := range r.Messages {
		at := fmt.Sprintf("Messages[%d]", i)
		switch m.Role {
		case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleTool:
		default:
			return bad(at+".Role", fmt.Sprintf("%q (legal: system, developer, user, assistant, tool)", m.Role))
		}
		if m.Content != "" && len(m.Parts) > 0 {
			return bad(at+".Parts", "set together with Content (legal: one or the other)")
		}
		for j, p := range m.Parts {
			pat := fmt.Sprintf("%s.Parts[%d]", at, j)
			switch p.Type {
			case PartText:
			case PartImageURL:
				if m.Role != RoleUser {
					return bad(pat, fmt.Sprintf("image part in a %q message (legal: user messages only)", m.Role))
				}
				if p.ImageURL == nil || strings.TrimSpace(p.ImageURL.URL) == "" {
					return bad(pat+".ImageURL.URL", "empty (legal: an http(s) URL or a data: URI)")
				}
				u := p.ImageURL.URL
				if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "data:") {
					return bad(pat+".ImageURL.URL", "neither an http(s) URL nor a data: URI")
				}
				switch p.ImageURL.Detail {
				case "", "auto", "low", "high":
				default:
					return bad(pat+".ImageURL.Detail", fmt.Sprintf("%q (legal: auto, low, high, or empty)", p.ImageURL.Detail))
				}
			default:
				return bad(pat+".Type", fmt.Sprintf("%q (legal: text, image_url)", p.Type))
			}
		}
		if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
			return bad(at+".ToolCalls", fmt.Sprintf("set on a %q message (legal: assistant messages only)", m.Role))
		}
		for j, tc := range m.ToolCalls {
			tat := fmt.Sprintf("%s.ToolCalls[%d]", at, j)
			if tc.ID == "" {
				return bad(tat+".ID", "empty (the tool result names the call by it)")
			}
			if tc.Type != "" && tc.Type != ToolTypeFunction {
				return bad(tat+".Type", fmt.Sprintf("%q (legal: function)", tc.Type))
			}
			if tc.Function.Name == "" {
				return bad(tat+".Function.Name", "empty")
			}
		}
		if m.Role == RoleTool && m.ToolCallID == "" {
			return bad(at+".ToolCallID", "empty on a tool message (legal: the ID of the call it answers)")
		}
		if m.Role != RoleTool && m.ToolCallID != "" {
			return bad(at+".ToolCallID", fmt.Sprintf("set on a %q message (legal: tool messages only)", m.Role))
		}
	}
	names := map[string]bool{}
	for i, t := range r.Tools {
		at := fmt.Sprintf("Tools[%d]", i)
		if t.Type != "" && t.Type != ToolTypeFunction {
			return bad(at+".Type", fmt.Sprintf("%q (legal: function)", t.Type))
		}
		if !validName(t.Function.Name) {
			return bad(at+".Function.Name", fmt.Sprintf("%q (legal: 1 to 64 letters, digits, '_' or '-')", t.Function.Name))
		}
		if names[t.Function.Name] {
			return bad(at+".Function.Name", fmt.Sprintf("%q offered twice", t.Function.Name))
		}
		names[t.Function.Name] = true
		if _, err := SchemaJSON(t.Function.Parameters); err != nil {
			return bad(at+".Function.Parameters", err.Error())
		}
	}
	switch c := r.ToolChoice.(type) {
	case nil:
	case string:
		switch c {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		case "any":
			return bad("ToolChoice", `"any" (legal: auto, none, required, or a ToolChoiceFunction; "required" is sent to Anthropic as its "any")`)
		default:
			return bad("ToolChoice", fmt.Sprintf("%q (legal: auto, none, required, or a ToolChoiceFunction)", c))
		}
		if c == ToolChoiceRequired && len(r.Tools) == 0 {
			return bad("ToolChoice", "required without Tools (legal: offer at least one tool in Tools, or leave ToolChoice nil)")
		}
	case ToolChoiceFunction:
		if err := r.chosenTool(c.Name); err != nil {
			return err
		}
	case *ToolChoiceFunction:
		if c == nil {
			return bad("ToolChoice", "a nil *ToolChoiceFunction (legal: nil, \"auto\", \"none\", \"required\", or a ToolChoiceFunction naming one of Tools)")
		}
		if err := r.chosenTool(c.Name); err != nil {
			return err
		}
	default:
		return bad("ToolChoice", fmt.Sprintf("a %T (legal: nil, \"auto\", \"none\", \"required\", or a ToolChoiceFunction)", c))
	}
	if r.ParallelToolCalls != nil && len(r.Tools) == 0 {
		// Without tools there is nothing to call in parallel; OpenAI
		// answers 400 and Anthropic has nowhere to put it.
		return bad("ParallelToolCalls", "set without Tools (legal: nil, or set together with Tools)")
	}
	if rf := r.ResponseFormat; rf != nil {
		switch rf.Type {
		case FormatText, FormatJSONObject:
			if rf.JSONSchema != nil {
				return bad("ResponseFormat.JSONSchema", fmt.Sprintf("set with Type %q (legal: only with json_schema)", rf.Type))
			}
		case FormatJSONSchema:
			if rf.JSONSchema == nil {
				return bad("ResponseFormat.JSONSchema", "nil with Type json_schema")
			}
			if !validName(rf.JSONSchema.Name) {
				return bad("ResponseFormat.JSONSchema.Name", fmt.Sprintf("%q (legal: 1 to 64 letters, digits, '_' or '-')", rf.JSONSchema.Name))
			}
			schema, err := SchemaJSON(rf.JSONSchema.Schema)
			if err != nil {
				return bad("ResponseFormat.JSONSchema.Schema", err.Error())
			}
			if schema == nil {
				return bad("ResponseFormat.JSONSchema.Schema", "no schema (legal: a JSON schema object)")
			}
		default:
			return bad("ResponseFormat.Type", fmt.Sprintf("%q (legal: text, json_object, json_schema)", rf.Type))
		}
	}
	if r.MaxTokens < 0 {
		return bad("MaxTokens", fmt.Sprintf("%d (legal: ≥ 0, 0 for the default)", r.MaxTokens))
	}
	if t := r.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		return bad("Temperature", fmt.Sprintf("%v (legal: 0 to 2)", *t))
	}
	if p := r.TopP; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
		return bad("TopP", fmt.Sprintf("%v (legal: 0 to 1)", *p))
	}
	for i, s := range r.Stop {
		if s == "" {
			return bad(fmt.Sprintf("Stop[%d]", i), "empty (legal: non-empty text)")
		}
	}
	for k := range r.Extra {
		if k == "" {
			return bad("Extra", "empty key")
		}
	}
	if n, ok := r.Extra["n"]; ok {
		if one, text := isOne(n); !one {
			// More choices would be interleaved in one stream, or all but
			// the first dropped from a ChatResponse.
			return bad("Extra[n]", text+": a ChatResponse and a ChatStream carry one choice (legal: 1, or leave it out)")
		}
	}
	return nil
}

// isOne reports whether v, a value of Extra, is the number 1 as it is
// sent: any Go number type, json.Number or json.RawMessage, or whatever
// else encodes to it. Its text is the JSON sent, or v as Go prints it.
func isOne(v any) (one bool, text string) {
	b, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Sprint(v)
	}
	var f float64
	return json.Unmarshal(b, &f) == nil && f == 1, string(b)
}

// chosenTool checks that a ToolChoiceFunction names one of the request's
// tools (Validate has checked the tools themselves).
func (r ChatRequest) chosenTool(name string) error {
	if len(r.Tools) == 0 {
		return &RequestError{Field: "ToolChoice", Problem: fmt.Sprintf("function %q without Tools (legal: the name of a function offered in Tools)", name)}
	}
	offered := make([]string, 0, len(r.Tools))
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return nil
		}
		offered = append(offered, fmt.Sprintf("%q", t.Function.Name))
	}
	return &RequestError{Field: "ToolChoice", Problem: fmt.Sprintf("function %q is not one of Tools (legal: one of %s)", name, strings.Join(offered, ", "))}
}

// Validate checks what is illegal whatever the provider: an embedding
// request without inputs, or with an empty input (the embeddings API takes
// no empty string; whitespace is text and is sent).
func (r EmbedRequest) Validate() error {
	if len(r.Inputs) == 0 {
		return &RequestError{Request: "embedding", Field: "Inputs", Problem: "empty (legal: at least one input)"}
	}
	for i, in := range r.Inputs {
		if in == "" {
			return &RequestError{Request: "embedding", Field: fmt.Sprintf("Inputs[%d]", i), Problem: "the empty string (legal: text of at least one character)"}
		}
	}
	return nil
}

// Validate checks what is illegal whatever the provider: an OCR request
// without an image.
func (r OCRRequest) Validate() error {
	if len(r.Image) == 0 {
		return &RequestError{Request: "OCR", Field: "Image", Problem: "empty (legal: the image's bytes)"}
	}
	return nil
}

// SchemaJSON encodes a JSON schema given as any value (a map, a struct, a
// json.RawMessage, a []byte or string of JSON) and checks that it is a JSON
// object. No schema gives nil: nil, a nil map, pointer or json.RawMessage,
// empty JSON text, or JSON null.
func SchemaJSON(v any) (json.RawMessage, error) {
	var raw []byte
	switch s := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	case string:
		raw = []byte(s)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("does not encode to JSON: %v", err)
		}
		raw = b
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("not a JSON object (legal: a JSON schema object)")
	}
	return json.RawMessage(raw), nil
}

// ExtraConflict returns a *RequestError when a key of extra is one of the
// body keys a transport writes itself.
func ExtraConflict(extra map[string]any, reserved []string, src Source) error {
	for _, k := range reserved {
		if _, ok := extra[k]; ok {
			return &RequestError{
				Field:    "Extra[" + k + "]",
				Problem:  "pgw writes this key from a modelled field or itself; set the modelled field instead (Extra only adds keys pgw does not write)",
				Source:   src.Name,
				Provider: src.Provider,
			}
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
