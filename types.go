package pgw

import (
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// The names callers use, re-exported from the packages that define them.
// Each is a type alias: a pgw.Source is a config.Source, a pgw.ChatRequest a
// transport.ChatRequest, and so on, so values pass between the packages
// without conversion.
type (
	// Settings is the whole configuration of a gateway (config.Settings):
	// build it with config.FromEnv / FromMap / FromLookup, or in code.
	Settings = config.Settings
	// ScopeSettings is one scope's sources and policy.
	ScopeSettings = config.ScopeSettings
	// Source is one upstream of a scope: Name, BaseURL, APIKey, Model,
	// Timeout, RPM, TPM, MaxInFlight, Weight, Priority, BatchSize,
	// MaxTokens, Provider, LimitsFromHeaders. Printing it never shows the
	// API key.
	Source = config.Source
	// Secret holds a credential that never prints (config.Secret).
	Secret = config.Secret

	// Usage is the token count of one call (PromptTokens, CompletionTokens,
	// TotalTokens, CachedPromptTokens, ReasoningTokens); quotas settle on
	// the billable total.
	Usage = transport.Usage
	// Message is one chat message (Role, Content, Parts, ToolCalls,
	// ToolCallID, Name).
	Message = transport.Message
	// ChatRequest is a chat completion request.
	ChatRequest = transport.ChatRequest
	// ChatChunk is one piece of a streamed answer.
	ChatChunk = transport.ChatChunk
	// ChatResponse is a collected chat answer, with the source that gave it.
	ChatResponse = transport.ChatResponse
	// EmbedRequest asks for one vector per input.
	EmbedRequest = transport.EmbedRequest
	// EmbedResponse holds vectors in input order.
	EmbedResponse = transport.EmbedResponse
	// OCRRequest carries one image.
	OCRRequest = transport.OCRRequest
	// OCRResponse is the text read from one image.
	OCRResponse = transport.OCRResponse

	// ChatStream is what a ChatTransport returns: chunks until io.EOF, then
	// Close. The gateway's own stream is *Stream, which implements it.
	ChatStream = transport.ChatStream
	// ChatTransport opens a streamed chat completion on one source; plug an
	// SDK in with WithChatTransport.
	ChatTransport = transport.ChatTransport
	// EmbedTransport embeds one batch on one source (WithEmbedTransport).
	EmbedTransport = transport.EmbedTransport
	// OCRTransport reads one image on one source (WithOCRTransport).
	OCRTransport = transport.OCRTransport

	// Backoff is the backoff between failed attempts of a call: exponential,
	// full jitter, capped (WithBackoff).
	Backoff = retry.Backoff
	// State is a breaker state: StateClosed, StateOpen or StateHalfOpen.
	State = gate.State
	// Snapshot is a read-only view of one source's breaker record
	// (GatewayClient.Snapshot).
	Snapshot = gate.Snapshot
)

// The breaker states, as in package gate.
const (
	StateClosed   = gate.Closed
	StateOpen     = gate.Open
	StateHalfOpen = gate.HalfOpen
)

// The scopes the typed methods use: Chat and ChatStream run in ScopeChat,
// Embed in ScopeEmbedding, OCR and OCRPages in ScopeOCR. Call runs in any
// configured scope.
const (
	ScopeChat      = "CHAT"
	ScopeEmbedding = "EMBEDDING"
	ScopeOCR       = "OCR"
)

// The chat model's parts, tools and structured output, re-exported from
// package transport (see there for every field).
type (
	// ContentPart is one text or image part of a message.
	ContentPart = transport.ContentPart
	// ImageURL is an image part's picture: an http(s) URL or a data: URI,
	// and the detail asked for.
	ImageURL = transport.ImageURL
	// ToolCall is a tool an assistant message asked for (ID, Type,
	// Function).
	ToolCall = transport.ToolCall
	// FunctionCall is a tool call's function name and the model's argument
	// text.
	FunctionCall = transport.FunctionCall
	// Tool is a function the model may ask the caller to run.
	Tool = transport.Tool
	// FunctionDefinition describes a function offered as a tool: name,
	// description, JSON-schema parameters, strict.
	FunctionDefinition = transport.FunctionDefinition
	// ToolChoiceFunction, as ChatRequest.ToolChoice, makes the model call
	// the named function.
	ToolChoiceFunction = transport.ToolChoiceFunction
	// ResponseFormat asks for text, a JSON object or JSON matching a schema.
	ResponseFormat = transport.ResponseFormat
	// JSONSchema is the schema of a structured answer.
	JSONSchema = transport.JSONSchema
	// ToolCallDelta is a piece of one tool call in a streamed answer.
	ToolCallDelta = transport.ToolCallDelta
	// Collector assembles streamed chunks into a ChatResponse.
	Collector = transport.Collector
	// EventCounter is a chat stream that counts the event types it skipped.
	EventCounter = transport.EventCounter
	// RequestError (PGW-REQUEST) is a request that cannot be sent: an
	// illegal value (no messages, no embedding inputs, no image, …), or a
	// field the provider of one of the scope's sources cannot express. It
	// is returned before admission — no quota permit, no attempt, nothing
	// sent, nothing recorded against a source — and the observer gets one
	// CallResult "caller_error" with no attempts.
	RequestError = transport.RequestError
)

// Roles, part types, tool choices and response formats, as in package
// transport.
const (
	RoleSystem         = transport.RoleSystem
	RoleDeveloper      = transport.RoleDeveloper
	RoleUser           = transport.RoleUser
	RoleAssistant      = transport.RoleAssistant
	RoleTool           = transport.RoleTool
	PartText           = transport.PartText
	PartImageURL       = transport.PartImageURL
	ToolTypeFunction   = transport.ToolTypeFunction
	ToolChoiceAuto     = transport.ToolChoiceAuto
	ToolChoiceNone     = transport.ToolChoiceNone
	ToolChoiceRequired = transport.ToolChoiceRequired
	FormatText         = transport.FormatText
	FormatJSONObject   = transport.FormatJSONObject
	FormatJSONSchema   = transport.FormatJSONSchema
	// ImageTokenEstimate is what one image part counts in the token
	// estimate of a chat request.
	ImageTokenEstimate = transport.ImageTokenEstimate
)

// TextPart returns a text part.
func TextPart(text string) ContentPart { return transport.TextPart(text) }

// ImagePart returns an image part for url (an http(s) URL or a data: URI)
// with detail ("" for the provider's default).
func ImagePart(url, detail string) ContentPart { return transport.ImagePart(url, detail) }

// FunctionTool returns a function tool with a JSON-schema parameters value.
func FunctionTool(name, description string, parameters any) Tool {
	return transport.FunctionTool(name, description, parameters)
}
