// Package otel reports what pgw does as OpenTelemetry traces and metrics.
// Hand New's observer to the gateway:
//
//	gw, err := pgw.NewFromEnv(ctx, pgw.WithObserver(otel.New()))
//
// With no options it uses the global TracerProvider and MeterProvider
// (otel.SetTracerProvider, otel.SetMeterProvider), including ones set after
// New; WithTracerProvider and WithMeterProvider name others. It is its own
// Go module, so that only programs that import it depend on OpenTelemetry.
//
// # Semantic conventions
//
// The GenAI attributes and metrics follow the OpenTelemetry semantic
// conventions version 1.41.0 (SemConvVersion; the GenAI conventions have
// Development status and are now kept apart from the general ones). The
// tracer and meter carry that version's schema URL.
//
// # Spans
//
// A governed call is one trace fragment, a child of the span in the
// caller's ctx (a root span when there is none):
//
//	pgw.call                      INTERNAL  pgw.scope, pgw.operation, gen_ai.request.model,
//	│                                       pgw.result, pgw.attempts, pgw.source,
//	│                                       pgw.waited (s), pgw.waits, error.type
//	│  event pgw.wait                       pgw.wait.reason, pgw.wait.expected (s),
//	│                                       pgw.wait.duration (s), pgw.wait.naps,
//	│                                       pgw.source (admitted), error.type (gave up)
//	├─ chat gpt-4o-mini           CLIENT    one span per attempt, named
//	└─ chat gpt-4o-mini           CLIENT    "{gen_ai.operation.name} {gen_ai.request.model}"
//
// A call whose result is neither success nor abandoned has an error status
// on its span, and its error.type is its pgw.result: circuit_open,
// quota_exhausted, stalled, unavailable, caller_error, canceled, closed or
// error (observe.Result…).
//
// A wait that ends without a source names why in its event's error.type:
// canceled or deadline_exceeded when the caller's ctx ended it, closed when
// the gateway's Close did, otherwise the stable code of pgw's error
// (PGW-CB-OPEN when the breakers cannot reopen before the caller's
// deadline, PGW-EXHAUSTED when the quotas cannot or the call stalled), or
// for any other error the Go type of the innermost error of its chain that
// is more than text (a gate's *net.OpError, not the *fmt.wrapError around
// it), _OTHER when there is none. The event names the error that ended the
// wait, the call's span the class of the call's end, so the two differ for
// one call: a call that stalled has PGW-EXHAUSTED on its wait and stalled
// on its span, one whose deadline ended its wait deadline_exceeded and
// canceled.
//
// A hedged call's span has one "pgw.hedge" event per hedging event, stamped
// when it happened: pgw.hedge.outcome (fired, won, wasted, canceled,
// skipped_budget or skipped_no_source), pgw.hedge.primary (the source of
// the attempt the hedge raced) and pgw.source (the hedge's source; absent
// for a skipped one).
//
// An attempt's span carries gen_ai.operation.name ("chat" for chat and OCR,
// "embeddings"), gen_ai.provider.name, gen_ai.request.model,
// gen_ai.response.model (as the upstream names it), gen_ai.usage.input_tokens
// and gen_ai.usage.output_tokens, gen_ai.response.time_to_first_chunk (s) for
// a streamed answer, server.address and server.port (from the source's base
// URL), http.response.status_code and error.type (the status code, or pgw's
// outcome class) when it failed (an abandoned answer or a lost hedge race
// is no failure: no error.type, no error status), and pgw's own: pgw.scope, pgw.source,
// pgw.priority (the source's tier), pgw.breaker.state (the breaker's state
// when it admitted the attempt), pgw.probe (the attempt held the half-open
// probe lease), pgw.attempt (from 1), pgw.outcome (success, failure,
// throttle, fatal, caller_error, canceled, abandoned, closed, panic,
// hedge_lost) and pgw.retry_after (s; the upstream's Retry-After, which pgw
// honoured by holding the source off). The attempt of a custom function
// (pgw.Call, pgw.CallStream) and that of a request sent through
// GatewayClient.HTTPClient, whose operation pgw does not model, is a
// "pgw.attempt" span without gen_ai.operation.name, gen_ai.provider.name
// or gen_ai.request.model (gen_ai.response.model and the token counts when
// the answer names them), and it records none of the GenAI metrics.
//
// A streamed chat answer's attempt span, and the call's, end when the stream
// ends: at io.EOF, an error, or Close.
//
// The attempt's ctx carries its span down to the transport: the default
// transports write it into the request as W3C trace context (traceparent),
// so the upstream's spans join the caller's trace. A custom function given
// to pgw.Call gets the same ctx and may do the same with its own client.
//
// Spans and their timestamps come from the events pgw reports; the wall
// clock is never read twice for one moment.
//
// # Content
//
// No prompt, completion or upstream error text is recorded. The observer
// never sees the messages or the answer, only counts, names and timings;
// an error is recorded by its type (error.type), not its message.
//
// # Metrics
//
//	gen_ai.client.operation.duration             histogram, s         per attempt of a GenAI operation
//	gen_ai.client.token.usage                    histogram, {token}   gen_ai.token.type input / output
//	gen_ai.client.operation.time_to_first_chunk  histogram, s         streamed answers
//	pgw_attempts_total{scope,source,outcome}     counter
//	pgw_gate_rejections_total{scope,source,reason} counter
//	pgw_calls_total{scope,result}                counter
//	pgw_breaker_state{scope,source}              gauge: 0 closed, 1 open, 2 half_open
//	pgw_breaker_forced{scope,source}             gauge: 0 none, 1 forced open, 2 forced closed
//	pgw_in_flight{scope,source}                  up-down counter: attempts running
//	pgw_attempt_duration_seconds{scope,source}   histogram, s (attempts cut short left out)
//	pgw_wait_duration_seconds{scope}             histogram, s
//	pgw_hedges_total{scope,source,event}         counter
//	pgw_advertised_remaining{scope,source,window}  gauge: what the upstream last advertised is left (window: requests, tokens)
//	pgw_advertised_limit{scope,source,window}      gauge: the window's size the upstream last advertised
//	pgw_advertised_reset_seconds{scope,source,window} gauge, s: time to the window's reset, as of the last answer
//
// The breaker gauges show the state this process last saw: a source appears
// with its first attempt (as closed) or its first state change, as in
// observe/prom.
//
// An attempt that lost a hedge race (observe.OutcomeHedgeLost) is left out
// of gen_ai.client.operation.duration, its time to first chunk and
// pgw_attempt_duration_seconds, as observe/prom leaves it out: pgw cut it
// short when another attempt delivered, so its time says how long the race
// took, not how long the source takes. pgw_attempts_total{outcome=
// "hedge_lost"} counts it, and gen_ai.client.token.usage its tokens.
//
// So is the time of an attempt its caller's context or the gateway's Close
// ended (canceled, closed) and of a stream its caller closed before its end
// (abandoned), as observe.Measured tells: it says how long the caller
// waited or read; and of an attempt that panicked (panic): it says when the
// code it ran broke. pgw_attempts_total counts each by its outcome, its span
// keeps its time, gen_ai.client.token.usage its tokens, and
// gen_ai.client.operation.time_to_first_chunk its first chunk when one came
// — that time is the source's.
//
// No histogram times whole calls: a call's time is its waits, backoffs and
// attempts together, which pgw_wait_duration_seconds and the attempt
// histograms show apart; pgw_calls_total counts calls by result, and the
// call's span carries its time — for a cancelled call, up to the
// cancellation (pgw.result "canceled").
//
// The GenAI histograms use the conventions' bucket advice (DurationBuckets,
// TokenBuckets) and carry gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.request.model, gen_ai.response.model, server.address, server.port
// and error.type. pgw's own metrics have the names and labels observe/prom
// gives them, so dashboards read either.
//
// # Cost
//
// pgw asks the observer once per call whether it is enabled. While the
// TracerProvider is a no-op (the global one before it is set, or an
// explicit no-op) and no metric reader takes pgw's metrics, it says no, and
// the call builds no reports at all. The observer is called synchronously;
// do not wrap it in observe.Async, whose queue keeps the events but loses
// the contexts that carry the spans.
package otel
