// Package toolids renames the tool-call IDs of a conversation for a
// provider that takes only some IDs. An ID only pairs a tool call with its
// result within one request, so a conversation written by another provider
// can be sent with its IDs renamed, as long as a call and its result are
// renamed alike and no two IDs become one.
package toolids

import "github.com/pgw-go/pgw/transport"

// Map returns the renaming of the tool-call IDs of msgs (the calls'
// and the results' IDs) for a provider that takes the IDs valid reports.
// A valid ID is sent as it is. Any other is sent as candidate(id, n) for
// the first n = 0, 1, … that is no ID of the request and no ID given to
// another: the same for a call and its result. IDs not in msgs map to
// themselves.
func Map(msgs []transport.Message, valid func(string) bool, candidate func(id string, n int) string) func(string) string {
	var seen []string
	used := map[string]bool{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			seen = append(seen, tc.ID)
		}
		if m.ToolCallID != "" {
			seen = append(seen, m.ToolCallID)
		}
	}
	for _, id := range seen {
		if valid(id) {
			used[id] = true
		}
	}
	mapped := map[string]string{}
	for _, id := range seen {
		if valid(id) || mapped[id] != "" {
			continue
		}
		out := candidate(id, 0)
		for n := 1; used[out]; n++ {
			out = candidate(id, n)
		}
		used[out] = true
		mapped[id] = out
	}
	return func(id string) string {
		if out, ok := mapped[id]; ok {
			return out
		}
		return id
	}
}
