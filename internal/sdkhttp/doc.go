// Package sdkhttp reads what the governed http.Client needs from raw HTTP
// traffic: server-sent events one at a time (content, terminal and error
// events, token usage), the usage of a JSON answer, and the model of a JSON
// request, rewritten in place. It knows the wire forms of OpenAI's chat
// completions and Responses API and of Anthropic's Messages API.
package sdkhttp
