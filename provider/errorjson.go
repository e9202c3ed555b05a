package provider

import (
	"encoding/json"

	"github.com/pgw-go/pgw/config"
)

// ErrorJSON renders an error answer's body in the format of p, the one its
// SDKs parse into their error types: {"error": {"message", "type", "code",
// "param"}} for OpenAI and Azure, {"type": "error", "error": {"type",
// "message"}} for Anthropic (which has no code: the code is left out). It is
// what a custom transport or proxy answers for an error of its own.
func ErrorJSON(p config.Provider, typ, code, message string) []byte {
	var v any
	if p == config.ProviderAnthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}}
	} else {
		v = map[string]any{"error": map[string]any{"message": message, "type": typ, "code": code, "param": nil}}
	}
	b, _ := json.Marshal(v) // maps of strings always marshal
	return b
}
