package sdkhttp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/provider"
	"github.com/pgw-go/pgw/transport"
)

// MaxEvent bounds one server-sent event; a longer one cuts the stream.
const MaxEvent = 8 << 20

// ErrNoTerminalEvent is the failure of an event stream that ended without
// its terminal event ("data: [DONE]", message_stop, response.completed …):
// the answer was cut.
var ErrNoTerminalEvent = errors.New("the event stream ended without its terminal event")

// noTerminalEvent is the error Events.Recv returns for a cut stream: its
// text is ErrNoTerminalEvent's, and it matches both ErrNoTerminalEvent and
// io.ErrUnexpectedEOF, the error a Go caller (an SDK's stream among them)
// checks for a body that ended early.
type noTerminalEvent struct{}

func (noTerminalEvent) Error() string { return ErrNoTerminalEvent.Error() }

func (noTerminalEvent) Is(target error) bool {
	return target == ErrNoTerminalEvent || target == io.ErrUnexpectedEOF
}

// Item is one piece of an answer's body as the caller will read it: a whole
// server-sent event (its blank line included), a whole JSON answer, or a
// chunk of any other body.
type Item struct {
	// Raw are the bytes, exactly as the upstream sent them.
	Raw []byte
	// Content reports whether the item carries part of the answer (text,
	// a tool call, a finish reason) rather than a preamble (a role-only
	// chunk, message_start, ping, a comment).
	Content bool
	// Terminal reports whether the item ends the answer.
	Terminal bool
	// Err is the error an error event reports.
	Err error
	// Usage is the token usage the item reports, if any.
	Usage *transport.Usage
	// Model is the model the item says answered, if it names one.
	Model string
}

// Events reads a text/event-stream body one event at a time. Recv returns
// io.EOF after the terminal event, and an error matching ErrNoTerminalEvent
// and io.ErrUnexpectedEOF when the body ends without one — unless the answer's finish reason came (every
// choice's finish_reason, Anthropic's stop_reason): then only the terminal
// event is missing, as some OpenAI-compatible servers send none, and the
// body's end is io.EOF, as pgw's own transports take it. A UTF-8 byte order mark at the start of the body
// is ignored when the events are read (and passed on in Raw). Not safe for
// concurrent use, except Close.
type Events struct {
	// Resp is the upstream response whose body is read.
	Resp *http.Response
	// OnModel, when set, is called with the first model an event names.
	OnModel func(model string)
	// Source is the source that answers: its credentials
	// (provider.Credentials) are redacted from an error event, its error
	// and its Raw, where an upstream may echo the request.
	Source  config.Source
	r       *bufio.Reader
	started bool
	ended   bool
	modeled bool
	begun   bool // the body's first line has been read (its BOM ignored)
	// choices[i] reports whether choice i's finish reason came; stopped,
	// whether Anthropic's stop_reason did.
	choices []bool
	stopped bool
	input   inputParts // the prompt's figures reported so far
}

// finished reports whether the answer's finish reason came: every choice
// seen has one, or the message's stop reason came.
func (e *Events) finished() bool {
	if e.stopped {
		return true
	}
	for _, f := range e.choices {
		if !f {
			return false
		}
	}
	return len(e.choices) > 0
}

// bom is the UTF-8 byte order mark that may open an event stream.
var bom = []byte("\xEF\xBB\xBF")

// NewEvents reads resp's body as server-sent events.
func NewEvents(resp *http.Response) *Events {
	return &Events{Resp: resp, r: bufio.NewReaderSize(resp.Body, 4<<10)}
}

// Close closes the body.
func (e *Events) Close() error { return e.Resp.Body.Close() }

// Recv returns the next event.
func (e *Events) Recv() (Item, error) {
	if e.ended {
		return Item{}, io.EOF
	}
	var raw []byte
	var data [][]byte
	var name []byte
	for {
		line, err := e.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(raw)+len(buf) <= MaxEvent {
				line, err = e.r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if len(raw)+len(line) > MaxEvent {
			return Item{}, fmt.Errorf("a server-sent event longer than %d bytes", MaxEvent)
		}
		raw = append(raw, line...)
		if err != nil {
			if err == io.EOF {
				if len(bytes.TrimSpace(raw)) == 0 {
					if e.finished() {
						e.ended = true
						return Item{}, io.EOF
					}
					return Item{}, noTerminalEvent{}
				}
				// The last event lacks its blank line: deliver it, and let
				// the next Recv decide.
				return e.item(raw, name, data), nil
			}
			return Item{}, err
		}
		field := bytes.TrimRight(line, "\r\n")
		if !e.begun {
			e.begun = true
			field = bytes.TrimPrefix(field, bom)
		}
		if len(field) == 0 {
			if len(data) == 0 && len(name) == 0 {
				// Comments or stray blank lines: part of the next event.
				lead := bytes.TrimPrefix(bytes.TrimSpace(raw), bom)
				if len(lead) == 0 || bytes.HasPrefix(lead, []byte(":")) {
					return Item{Raw: raw}, nil
				}
				continue
			}
			return e.item(raw, name, data), nil
		}
		switch {
		case bytes.HasPrefix(field, []byte("data:")):
			data = append(data, trimOneSpace(field[len("data:"):]))
		case bytes.HasPrefix(field, []byte("event:")):
			name = bytes.TrimSpace(field[len("event:"):])
		}
	}
}

func trimOneSpace(b []byte) []byte {
	if len(b) > 0 && b[0] == ' ' {
		return b[1:]
	}
	return b
}

// terminalTypes are the event names (or data "type"s) that end an answer.
var terminalTypes = map[string]bool{
	"message_stop":        true, // Anthropic Messages
	"response.completed":  true, // OpenAI Responses
	"response.incomplete": true,
}

// errorTypes are the event names (or data "type"s) that report a failure.
var errorTypes = map[string]bool{
	"error":           true,
	"response.failed": true,
}

// eventJSON is what an event's data says about its kind and usage.
type eventJSON struct {
	Type    string          `json:"type"`
	Error   json.RawMessage `json:"error"`
	Usage   *usageJSON      `json:"usage"`
	Model   string          `json:"model"`
	Choices choicesJSON     `json:"choices"`
	Delta   stopJSON        `json:"delta"`
	Message *struct {
		Usage *usageJSON `json:"usage"`
		Model string     `json:"model"`
	} `json:"message"`
	Response *struct {
		Usage *usageJSON      `json:"usage"`
		Error json.RawMessage `json:"error"`
		Model string          `json:"model"`
	} `json:"response"`
}

// choiceJSON is what a chat completion chunk's choice says of its end.
type choiceJSON struct {
	Index        int     `json:"index"`
	FinishReason *string `json:"finish_reason"`
}

// choicesJSON is a chunk's "choices"; anything but an array is no choice.
type choicesJSON []choiceJSON

// UnmarshalJSON implements json.Unmarshaler.
func (c *choicesJSON) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	return json.Unmarshal(b, (*[]choiceJSON)(c))
}

// stopJSON is Anthropic's message_delta "delta": its stop reason. Other
// events' deltas (objects without one, or strings) are none.
type stopJSON struct{ StopReason string }

// UnmarshalJSON implements json.Unmarshaler.
func (s *stopJSON) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"stop_reason"`)) {
		return nil
	}
	var d struct {
		StopReason *string `json:"stop_reason"`
	}
	if json.Unmarshal(b, &d) == nil && d.StopReason != nil {
		s.StopReason = *d.StopReason
	}
	return nil
}

// model is the model an event names: its own, its message's (Anthropic's
// message_start) or its response's (OpenAI Responses).
func (ev *eventJSON) model() string {
	switch {
	case ev.Model != "":
		return ev.Model
	case ev.Message != nil && ev.Message.Model != "":
		return ev.Message.Model
	case ev.Response != nil:
		return ev.Response.Model
	}
	return ""
}

func (e *Events) item(raw, name []byte, data [][]byte) Item {
	it := Item{Raw: raw}
	d := bytes.Join(data, []byte("\n"))
	if len(data) == 0 {
		return it
	}
	if bytes.Equal(bytes.TrimSpace(d), []byte("[DONE]")) {
		it.Terminal, e.ended = true, true
		return it
	}
	var ev eventJSON
	isJSON := json.Unmarshal(d, &ev) == nil
	kind := string(name)
	if kind == "" {
		kind = ev.Type
	}
	switch {
	case errorTypes[kind] || isJSON && len(ev.Error) > 0 && !bytes.Equal(ev.Error, []byte("null")):
		errBody := ev.Error
		if ev.Response != nil && len(ev.Response.Error) > 0 {
			errBody = ev.Response.Error
		}
		creds := provider.Credentials(e.Source)
		it.Raw = redactEvent(it.Raw, creds)
		it.Err, it.Terminal, e.ended = eventError(errBody, e.Source), true, true
		return it
	case terminalTypes[kind]:
		it.Terminal, e.ended = true, true
	}
	if isJSON {
		e.noteFinish(&ev)
		it.Usage = eventUsage(&ev, &e.input)
		it.Model = ev.model()
		if it.Model != "" && !e.modeled {
			e.modeled = true
			if e.OnModel != nil {
				e.OnModel(it.Model)
			}
		}
	}
	if !e.started {
		it.Content = !isJSON && len(bytes.TrimSpace(d)) > 0 || isJSON && carriesContent(d)
		e.started = it.Content
	} else {
		it.Content = true
	}
	return it
}

// noteFinish notes the finish reasons ev carries.
func (e *Events) noteFinish(ev *eventJSON) {
	if ev.Delta.StopReason != "" {
		e.stopped = true
	}
	for _, c := range ev.Choices {
		if c.Index < 0 || c.Index > 1<<10 {
			continue
		}
		for len(e.choices) <= c.Index {
			e.choices = append(e.choices, false)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			e.choices[c.Index] = true
		}
	}
}

// redactEvent redacts creds, and every echoed credential header
// (provider.RedactAuthEchoBody), from a raw event line by line, each data
// line's payload on its own: one that is JSON stays JSON for the SDK that
// parses it (provider.RedactCredentials).
func redactEvent(raw []byte, creds []string) []byte {
	var out []byte
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line = raw[:i+1]
		}
		raw = raw[len(line):]
		body := bytes.TrimRight(line, "\r\n")
		head := 0
		if bytes.HasPrefix(body, []byte("data:")) {
			head = len("data:")
			if len(body) > head && body[head] == ' ' {
				head++
			}
		}
		out = append(out, body[:head]...)
		out = append(out, provider.RedactAuthEchoBody(provider.RedactCredentials(body[head:], creds))...)
		out = append(out, line[len(body):]...)
	}
	return out
}

// eventError turns an error event's error object into the failure it
// reports, with the status its type or code stands for
// (provider.ErrorBody.Status: a rate limit is a 429, an overload a 529,
// authentication_error or invalid_api_key a 401, anything unknown a 500 —
// the answer failed upstream after its headers said 200); one that says the
// quota or credit is spent (provider.ErrorBody.InsufficientQuota) is marked
// so (errs.SpentQuota), as the same error sent as a 429 is. src's
// credentials are redacted from its message.
func eventError(body json.RawMessage, src config.Source) error {
	return errorFailure(body, src, "in the stream: ", "an error event in the stream")
}

// errorFailure is eventError for an error value sent where an answer was
// due, read as every transport reads it (provider.ParseAnswerError): where
// prefixes the message, none stands for an error that says nothing at all.
func errorFailure(body json.RawMessage, src config.Source, where, none string) error {
	eb := provider.ParseAnswerError(src, body)
	msg := eb.Text()
	if msg == "" {
		msg = none
	}
	he := &errs.HTTPError{StatusCode: eb.Status(), Message: where + msg}
	if eb.InsufficientQuota() {
		return errs.SpentQuota(he)
	}
	return he
}

// contentKeys hold a piece of the answer when their value is a non-empty
// string.
var contentKeys = map[string]bool{
	"content": true, "text": true, "delta": true, "arguments": true, "partial_json": true,
	"refusal": true, "thinking": true, "finish_reason": true, "stop_reason": true,
	"transcript": true, "b64_json": true,
}

// carriesContent reports whether a JSON event carries part of the answer:
// a non-empty string under one of contentKeys, or a non-empty tool_calls
// list, at any depth (usage objects excepted).
func carriesContent(d []byte) bool {
	var v any
	if json.Unmarshal(d, &v) != nil {
		return true
	}
	return contentIn(v, 0)
}

func contentIn(v any, depth int) bool {
	if depth > 16 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "usage" {
				continue
			}
			if s, ok := val.(string); ok && s != "" && contentKeys[k] {
				return true
			}
			if l, ok := val.([]any); ok && k == "tool_calls" && len(l) > 0 {
				return true
			}
			if contentIn(val, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if contentIn(e, depth+1) {
				return true
			}
		}
	}
	return false
}
