package transport

import (
	"sort"
	"strings"
)

// Collector assembles a streamed answer into a ChatResponse: text and
// refusal concatenated, tool-call pieces joined by Index, the last finish
// reason and usage kept. The zero value is ready to use; not safe for
// concurrent use.
type Collector struct {
	content strings.Builder
	refusal strings.Builder
	calls   map[int]*callParts
	finish  string
	usage   *Usage
}

type callParts struct {
	id, name string
	args     strings.Builder
}

// Add takes the next chunk of the stream.
func (c *Collector) Add(ch ChatChunk) {
	c.content.WriteString(ch.Delta)
	c.refusal.WriteString(ch.Refusal)
	for _, d := range ch.ToolCalls {
		if c.calls == nil {
			c.calls = map[int]*callParts{}
		}
		p := c.calls[d.Index]
		if p == nil {
			p = &callParts{}
			c.calls[d.Index] = p
		}
		// Some servers repeat the ID and name on every piece: the first
		// wins.
		if p.id == "" {
			p.id = d.ID
		}
		if p.name == "" {
			p.name = d.Name
		}
		p.args.WriteString(d.Arguments)
	}
	if ch.FinishReason != "" {
		c.finish = ch.FinishReason
	}
	if ch.Usage != nil {
		u := *ch.Usage
		c.usage = &u
	}
}

// Response returns what was collected. Tool-call arguments are the model's
// text as received, whether or not it is valid JSON.
func (c *Collector) Response() ChatResponse {
	r := ChatResponse{Content: c.content.String(), Refusal: c.refusal.String(), FinishReason: c.finish}
	if c.usage != nil {
		r.Usage = *c.usage
	}
	if len(c.calls) > 0 {
		idx := make([]int, 0, len(c.calls))
		for i := range c.calls {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		r.ToolCalls = make([]ToolCall, 0, len(idx))
		for _, i := range idx {
			p := c.calls[i]
			r.ToolCalls = append(r.ToolCalls, ToolCall{
				ID:       p.id,
				Type:     ToolTypeFunction,
				Function: FunctionCall{Name: p.name, Arguments: p.args.String()},
			})
		}
	}
	return r
}
