package toolids

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/transport"
)

// upper takes only IDs in upper case and renames any other to its upper
// case, with n appended past the first candidate.
func upper() (func(string) bool, func(string, int) string) {
	valid := func(id string) bool { return id != "" && id == strings.ToUpper(id) }
	candidate := func(id string, n int) string {
		if n == 0 {
			return strings.ToUpper(id)
		}
		return strings.ToUpper(id) + strings.Repeat("+", n)
	}
	return valid, candidate
}

func TestMapRenamesACallAndItsResultAlikeAndKeepsValidIDs(t *testing.T) {
	valid, candidate := upper()
	msgs := []transport.Message{
		{Role: transport.RoleAssistant, ToolCalls: []transport.ToolCall{{ID: "a1"}, {ID: "KEEP"}}},
		{Role: transport.RoleTool, ToolCallID: "a1"},
		{Role: transport.RoleTool, ToolCallID: "KEEP"},
	}
	id := Map(msgs, valid, candidate)
	assert.Equal(t, "A1", id("a1"))
	assert.Equal(t, "KEEP", id("KEEP"))
	assert.Equal(t, "other", id("other"), "an ID not in the request maps to itself")
}

func TestMapNeverMakesTwoIDsOne(t *testing.T) {
	valid, candidate := upper()
	// "x" would become "X", which the request already holds; "X" stays.
	msgs := []transport.Message{
		{Role: transport.RoleAssistant, ToolCalls: []transport.ToolCall{{ID: "x"}, {ID: "X"}}},
		{Role: transport.RoleTool, ToolCallID: "x"},
		{Role: transport.RoleTool, ToolCallID: "X"},
	}
	id := Map(msgs, valid, candidate)
	assert.Equal(t, "X", id("X"))
	assert.Equal(t, "X+", id("x"))
}
