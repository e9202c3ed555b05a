// Package config holds a gateway's settings: the Settings struct,
// which may be built in code, and its reading from environment variables.
//
// # Keys
//
// The fixed keys (read with envconfig by FromEnv):
//
//	PGW_BREAKER_BACKEND      memory (default) | redis | noop
//	PGW_QUOTA_BACKEND        memory | redis; default: the breaker's, noop → memory
//	PGW_REDIS_URL            go-redis URL, default redis://127.0.0.1:6379/0 (a secret: it may hold a password)
//	PGW_REDIS_CLUSTER_ADDRS  host:port,host:port — selects Redis Cluster (PGW_REDIS_URL then names database 0 or none)
//	PGW_REDIS_PREFIX         key prefix, default pgw
//	PGW_REDIS_DOWN           fail_open (default) | fail_closed
//	PGW_REDIS_PROBE_INTERVAL_S  the outage prober's interval in [0.002, 10000000), default 0.5
//	PGW_REDIS_PROBE_TIMEOUT_S   one probe's bound, ≤ half the interval, default min(0.2, interval/2)
//	PGW_REDIS_PROBE_BACKOFF_S   longest pause between probes in an outage, ≥ interval, default max(2, interval)
//	PGW_REDIS_HEARTBEAT_TTL_S   a process's heartbeat life, > interval, default max(3, 6 × interval), at most 10000000
//	PGW_SCOPES               scope names to read, default CHAT,EMBEDDING,OCR
//
// Per scope listed in PGW_SCOPES; a scope is active when {SCOPE}__SOURCES is
// set, and the keys of an inactive scope are not read (FromEnv and FromMap
// report them):
//
//	{SCOPE}__SOURCES            comma list of source names (required)
//	{SCOPE}__QUOTA_FULL         wait (default) | fail_fast
//	{SCOPE}__CIRCUIT_OPEN       wait | fail_fast (default; single-source scopes should say wait)
//	{SCOPE}__MAX_ATTEMPTS       ≥ 1, default 3 × number of sources
//	{SCOPE}__STALL_WINDOW_S     default 300
//	{SCOPE}__POLL_INTERVAL_S    default 0.05
//	{SCOPE}__FAILURE_THRESHOLD  ≥ 1, default 5
//	{SCOPE}__COOLDOWN_S         default 60
//	{SCOPE}__MAX_COOLDOWN_S     ≥ COOLDOWN_S, default max(600, COOLDOWN_S)
//	{SCOPE}__PROBE_TTL_S        default gate.DefaultProbeTTL(cooldown, slowest source timeout)
//	{SCOPE}__BALANCE            weighted | latency, default weighted
//	{SCOPE}__HEDGE_AFTER_S      fixed hedge delay; unset or 0 = none
//	{SCOPE}__HEDGE_AFTER        pNN (or PNN) in [50, 99.9]: adaptive hedge delay; unset = none
//	{SCOPE}__HEDGE_BUDGET       share of calls that may hedge, (0, 1], default 0.1
//	{SCOPE}__HEDGE_MAX          hedges per call, [1, 4], default 1
//
// Per source, under {SCOPE}__{KEY}__ where KEY is the source name upper-cased
// with '-' turned into '_' (CHAT__SOURCES=eu-1 → CHAT__EU_1__BASE_URL); the
// source keeps its name as written:
//
//	BASE_URL       absolute http(s) URL; optional (a custom Call may need none)
//	API_KEY        secret, never printed; empty or unset means none
//	MODEL          free text
//	TIMEOUT_S      default 60
//	RPM, TPM       requests and tokens per minute: 0 (default) = unlimited,
//	               1…18764998, or a multiple of 1000 up to 2147483000
//	MAX_IN_FLIGHT  ≥ 0, 0 (default) = unlimited
//	WEIGHT         share within a priority tier, 1…1000000, default 1
//	PRIORITY       integer, default 0; lower is tried first
//	BATCH_SIZE     most inputs per embedding request, ≥ 0, 0 (default) = no split
//	MAX_TOKENS     answer bound of chat requests that set none and of OCR
//	               requests, ≥ 0, 0 (default) = the provider's default
//	               (Anthropic, which requires one: 4096)
//	PROVIDER       openai (default) | azure | anthropic: credential header, error
//	               and rate-limit formats, BASE_URL convention, default transport
//	LIMITS_FROM_HEADERS  true | false (default), any case: the advertised
//	               limits replace RPM and TPM
//	ORGANIZATION, PROJECT  PROVIDER=openai only: the OpenAI-Organization and
//	               OpenAI-Project headers of the source's requests; unset for none
//
// Keys ending in _S are seconds and accept fractions ("0.5"), within
// [0.001, 10000000]; NaN, infinities, negatives and zero are rejected (but
// HEDGE_AFTER_S takes 0 for no fixed hedge delay).
//
// # Rules
//
// Nothing invalid is silently defaulted. A key set to the empty string is
// set: for API_KEY and MODEL it means empty, for every other key it is an
// error (unset the key to get the default). Enumerated values are matched
// as written, in lower case (spaces around one are ignored); true and
// false in any case. Scope names are upper-case as in the keys; source
// names are letters and digits joined by single '-' or '_', and two names of
// one scope that give the same key are an error.
//
// Every problem is reported at once: one error, which errors.As turns into
// a *pgw.ConfigError (code PGW-CONFIG), lists each bad key with its value and
// the legal values, sorted by key; a required key that is missing shows as
// "KEY unset". Secret values are shown as "<redacted>", URLs without their
// user info and query.
//
// Settings, ScopeSettings and Source print the same way under every fmt
// verb, slog and encoding/json: API keys and the Redis URL are Secrets, and
// a BASE_URL loses its user info and query. One limit is fmt's: it calls no
// method of a value it reaches through an unexported field, so a Settings
// kept in an unexported field of a struct that is printed whole shows its
// BASE_URLs as written (its Secrets still show nothing); so does a
// *Settings there under a verb other than %v. Print the Settings itself, or
// log the fields that matter.
//
// FromEnv and FromMap, which see every key that is set, also report each key
// that is no key pgw reads but sits in its namespace or next to it, with a
// "did you mean" when a known key is near: unknown keys under an active
// scope's prefix (CHAT__CIRCUT_OPEN); keys of a source not listed in
// {SCOPE}__SOURCES (CHAT__BAKUP__API_KEY); keys of a listed scope whose
// SOURCES is not set; {SCOPE}__SOURCES of a scope not in PGW_SCOPES; a pgw
// key with the wrong case (chat__sources), a single or a triple underscore
// (CHAT_SOURCES, CHAT___A__BASE_URL) or one character changed, missing,
// added or swapped; keys under a listed scope's name in the wrong case or
// one character off (CAHT__CIRCUIT_OPNE); and near misses of the PGW_ keys,
// up to two characters off (PGW_REDIS_PREFX). Every other name is left
// alone — the environment is the whole process's — a PGW_ name further from
// every pgw key (PGW_TEST_ADDR) included. FromLookup cannot enumerate keys
// and reports none of these. FromEnvRequiring and
// Settings.ValidateRequiring add keys the caller needs (the gateway needs
// BASE_URL for its default transport) to the same error.
//
// Settings built in code follow the same rules through Settings.Validate: a
// zero field means its default, and problems are named by the key that would
// set the field.
package config
