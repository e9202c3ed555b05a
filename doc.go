// Package pgw makes governed calls to upstream LLM chat, embedding and OCR
// providers: every call goes through admission (which source may run now),
// a per-source circuit breaker, per-source rate quotas, adaptive pacing,
// retries with backoff and source fail-over, and a bounded stall budget.
// State lives in process memory by default and in Redis when several
// processes must share it.
//
// Configure it with environment variables, per scope (see package config and
// docs/USAGE.md):
//
//	CHAT__SOURCES=primary,backup
//	CHAT__PRIMARY__BASE_URL=https://api.example.com/v1
//	CHAT__PRIMARY__API_KEY=sk-…
//	CHAT__BACKUP__BASE_URL=https://backup.example.com/v1
//	CHAT__BACKUP__PRIORITY=1
//
// then build one GatewayClient per process and share it:
//
//	gw, err := pgw.NewFromEnv(ctx)
//	if err != nil { … } // a *pgw.ConfigError lists every bad key
//	defer gw.Close()
//	resp, err := gw.Chat(ctx, pgw.ChatRequest{Messages: []pgw.Message{{Role: "user", Content: "hi"}}})
//
// Chat and ChatStream run in the CHAT scope, Embed in EMBEDDING, OCR in OCR;
// Call runs any function as a governed call in any configured scope. The
// default transports speak the OpenAI-compatible HTTP API (package openai),
// or Anthropic's Messages API (package anthropic) for chat and OCR sources
// with PROVIDER=anthropic; any SDK plugs in through ChatTransport,
// EmbedTransport and OCRTransport.
//
// A scope with a single source should set {SCOPE}__CIRCUIT_OPEN=wait: with
// the default fail_fast, the moment its one breaker opens every call fails
// with *CircuitOpenError until the cooldown ends.
//
// All the retrying, backoff, fail-over and waiting a call needs happens
// inside the library. The errors that end a call — CircuitOpenError,
// AllSourcesExhausted, GatewayUnavailableError — mean that its call-level
// budget is spent (or, with fail_fast, that the scope chose not to spend
// it). A caller that re-submits the work later is doing task-level retry, a
// different decision; the RetryAfter of CircuitOpenError and
// AllSourcesExhausted says how long to wait first when a wait is certain. Every error carries a stable Code, and errors.As
// into the error types of this package works whichever package the error
// came from.
package pgw
