package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/internal/testutil"
)

// pgw runs the command in-process and returns its exit status and output.
func pgw(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// table parses status output into rows keyed "SCOPE/SOURCE", each a map from
// column name to cell, cutting lines at the header's column offsets.
func table(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	header := lines[0]
	var names []string
	var starts []int
	for i, f := range strings.Fields(header) {
		names = append(names, f)
		start := strings.Index(header, f)
		if i > 0 {
			start = strings.Index(header[starts[i-1]+len(names[i-1]):], f) + starts[i-1] + len(names[i-1])
		}
		starts = append(starts, start)
	}
	rows := map[string]map[string]string{}
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, n := range names {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			row[n] = strings.TrimSpace(l[min(starts[i], len(l)):end])
		}
		rows[row["SCOPE"]+"/"+row["SOURCE"]] = row
	}
	return rows
}

// gatewayEnv is the configuration a gateway process would have: CHAT with
// three sources (one with quotas), EMBEDDING with one.
func gatewayEnv(t *testing.T, addr string) {
	t.Setenv("PGW_REDIS_URL", "redis://"+addr)
	t.Setenv("PGW_SCOPES", "CHAT,EMBEDDING")
	t.Setenv("CHAT__SOURCES", "openai,azure,local")
	t.Setenv("CHAT__FAILURE_THRESHOLD", "1")
	t.Setenv("CHAT__COOLDOWN_S", "30")
	t.Setenv("CHAT__OPENAI__RPM", "60")
	t.Setenv("CHAT__OPENAI__TPM", "100000")
	t.Setenv("CHAT__OPENAI__MAX_IN_FLIGHT", "4")
	t.Setenv("EMBEDDING__SOURCES", "e1")
}

func trip(t *testing.T, b *redis.Breaker, source string) {
	t.Helper()
	ctx := t.Context()
	d, err := b.TryEnter(ctx, source)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	u, err := b.Record(ctx, source, d, gate.Failure)
	require.NoError(t, err)
	require.Equal(t, gate.Open, u.State)
}

// serverNow is the Redis server's clock, the one its gates' scripts and pgw
// status read.
func serverNow(t *testing.T, c *goredis.Client) time.Time {
	t.Helper()
	now, err := c.Time(t.Context()).Result()
	require.NoError(t, err)
	return now
}

// assertLeft checks a duration status shows as what is left of span, set
// between setFrom and setTo and read between readFrom and readTo (server
// times), as pgw status prints it: rounded to 100ms.
func assertLeft(t *testing.T, got, span time.Duration, setFrom, setTo, readFrom, readTo time.Time, what string) {
	t.Helper()
	const rounding = 50 * time.Millisecond
	assert.GreaterOrEqual(t, got, span-readTo.Sub(setFrom)-rounding, "%s %v", what, got)
	assert.LessOrEqual(t, got, span-readFrom.Sub(setTo)+rounding, "%s %v", what, got)
}

// assertUsed checks a rate column of pgw status ("used/limit"): n taken
// between takeFrom and takeTo, read between readFrom and readTo (server
// times), drained at limit a minute, rounded up as status prints it — at
// least what is left after the longest time between a take and the read,
// at most what is left after the shortest.
func assertUsed(t *testing.T, cell string, limit int, n int64, takeFrom, takeTo, readFrom, readTo time.Time, what string) {
	t.Helper()
	u, ok := strings.CutSuffix(cell, "/"+strconv.Itoa(limit))
	require.True(t, ok, "%s %q", what, cell)
	got, err := strconv.ParseInt(u, 10, 64)
	require.NoError(t, err, "%s %q", what, cell)
	r := gate.NewRate(limit)
	left := func(elapsed time.Duration) int64 {
		level := max(n*r.Unit-elapsed.Microseconds()*r.Drain, 0)
		return (level + r.Unit - 1) / r.Unit
	}
	assert.GreaterOrEqual(t, got, left(readTo.Sub(takeFrom)), "%s %q", what, cell)
	assert.LessOrEqual(t, got, left(readFrom.Sub(takeTo)), "%s %q", what, cell)
}

func TestStatusAndForceAgainstRedisServer(t *testing.T) {
	srv := testutil.StartRedis(t)
	gatewayEnv(t, srv.Addr)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()

	chat, err := redis.NewBreaker(c, "CHAT", gate.Policy{ConsecutiveFailures: 1, Cooldown: 30 * time.Second})
	require.NoError(t, err)
	// openai: three calls admitted by the quota, one of them over.
	q, err := redis.NewQuota(c, "CHAT", map[string]gate.Limits{"openai": {RPM: 60, TPM: 100000, MaxInFlight: 4}})
	require.NoError(t, err)
	// Every time the gates and pgw status use is the server's: the test
	// reads it around what it does, and checks each time-dependent column
	// against the span in which what it shows happened, however long the
	// machine took between two steps.
	beforeAcquires := serverNow(t, c)
	var permits []gate.Permit
	for range 3 {
		p, d, err := q.Acquire(ctx, "openai", 1000)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		permits = append(permits, p)
	}
	afterAcquires := serverNow(t, c)
	require.NoError(t, q.Release(ctx, permits[0]))
	// openai advertised 7 of 60 requests left, resetting in 40s.
	adv, err := redis.NewBudget(c, "CHAT")
	require.NoError(t, err)
	beforeRefresh := serverNow(t, c)
	require.NoError(t, adv.Refresh(ctx, "openai", gate.Advertised{
		Requests: gate.AdvertisedWindow{Limit: 60, Remaining: 7, Reset: 40 * time.Second}, Tokens: gate.UnknownWindow}))
	afterRefresh := serverNow(t, c)
	// azure: open for 30s.
	beforeTrip := serverNow(t, c)
	trip(t, chat, "azure")
	afterTrip := serverNow(t, c)
	// local: open for 20ms, then a probe holds its lease for a minute.
	short, err := redis.NewBreaker(c, "CHAT", gate.Policy{ConsecutiveFailures: 1, Cooldown: 20 * time.Millisecond, ProbeTTL: time.Minute})
	require.NoError(t, err)
	trip(t, short, "local")
	time.Sleep(40 * time.Millisecond) // real time: let the 20ms cooldown pass
	d, err := short.TryEnter(ctx, "local")
	require.NoError(t, err)
	require.True(t, d.Probe)

	// An operator forces EMBEDDING/e1 open.
	code, out, errOut := pgw("open", "EMBEDDING", "e1")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "EMBEDDING/e1: closed → open (forced until reset)\n", out)

	beforeStatus := serverNow(t, c)
	code, out, errOut = pgw("status")
	afterStatus := serverNow(t, c)
	require.Equal(t, exitOK, code, errOut)
	t.Logf("pgw status:\n%s", out)
	rows := table(t, out)
	require.Len(t, rows, 4, "every configured source, with or without keys")

	openai := rows["CHAT/openai"]
	assert.Equal(t, "closed", openai["STATE"])
	assert.Equal(t, "-", openai["FORCED"])
	assert.Equal(t, "0", openai["FAILS"])
	assert.Equal(t, "2/4", openai["IN_FLIGHT"], "one of three permits released")
	// RPM and TPM drain their limit a minute: of the 3 requests and 3000
	// tokens taken, what went since the Acquires is gone.
	assertUsed(t, openai["RPM_USED"], 60, 3, beforeAcquires, afterAcquires, beforeStatus, afterStatus, "RPM_USED")
	assertUsed(t, openai["TPM_USED"], 100000, 3000, beforeAcquires, afterAcquires, beforeStatus, afterStatus, "TPM_USED")
	assert.Equal(t, "7/60", openai["ADV_REQUESTS"], "what the upstream advertised, for the fleet")
	assert.Equal(t, "-", openai["ADV_TOKENS"])
	reset, err := time.ParseDuration(openai["ADV_RESET"])
	require.NoError(t, err, "ADV_RESET %q", openai["ADV_RESET"])
	assertLeft(t, reset, 40*time.Second, beforeRefresh, afterRefresh, beforeStatus, afterStatus, "ADV_RESET")

	azure := rows["CHAT/azure"]
	assert.Equal(t, "open", azure["STATE"])
	assert.Equal(t, "30s", azure["COOLDOWN"])
	left, err := time.ParseDuration(azure["RETRY_IN"])
	require.NoError(t, err, "RETRY_IN %q", azure["RETRY_IN"])
	assertLeft(t, left, 30*time.Second, beforeTrip, afterTrip, beforeStatus, afterStatus, "RETRY_IN")
	assert.Equal(t, "-", azure["IN_FLIGHT"], "no quota on azure")
	assert.Equal(t, "-", azure["ADV_REQUESTS"], "nothing advertised")

	local := rows["CHAT/local"]
	assert.Equal(t, "half_open", local["STATE"])
	assert.True(t, strings.HasPrefix(local["PROBES"], "1/1 lease "), "PROBES %q", local["PROBES"])

	e1 := rows["EMBEDDING/e1"]
	assert.Equal(t, "open", e1["STATE"])
	assert.Equal(t, "open", e1["FORCED"])
	assert.Equal(t, "until reset", e1["RETRY_IN"])

	// The override reaches the gateways' gate: TryEnter rejects, RetryAfter 0.
	emb, err := redis.NewBreaker(c, "EMBEDDING", gate.Policy{})
	require.NoError(t, err)
	dec, err := emb.TryEnter(ctx, "e1")
	require.NoError(t, err)
	assert.False(t, dec.Allowed)
	assert.Zero(t, dec.RetryAfter)

	code, out, _ = pgw("close", "EMBEDDING", "e1")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "EMBEDDING/e1: open (forced until reset) → closed (forced until reset)\n", out)
	code, out, _ = pgw("close", "CHAT", "azure")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "CHAT/azure: open → closed (forced until reset)\n", out)
	code, out, _ = pgw("reset", "EMBEDDING", "e1")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "EMBEDDING/e1: closed (forced until reset) → closed\n", out)

	code, out, _ = pgw("status")
	require.Equal(t, exitOK, code)
	rows = table(t, out)
	assert.Equal(t, "-", rows["EMBEDDING/e1"]["FORCED"])
	assert.Equal(t, "closed", rows["CHAT/azure"]["FORCED"])
	assert.Equal(t, "closed", rows["CHAT/azure"]["STATE"])
}

func TestForceOfAnUnknownSourceNeedsCreate(t *testing.T) {
	srv := testutil.StartRedis(t)
	gatewayEnv(t, srv.Addr)
	code, out, errOut := pgw("open", "CHAT", "opnai")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no pgw state for CHAT/opnai")
	assert.Contains(t, errOut, "-create")

	code, out, errOut = pgw("-create", "open", "CHAT", "opnai")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "CHAT/opnai: closed → open (forced until reset)\n", out)
	code, out, _ = pgw("status")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "open", table(t, out)["CHAT/opnai"]["FORCED"], "a source with keys is listed though not configured")
}

func TestStatusFlagsOverrideTheEnvironmentAndPrefixesSeparate(t *testing.T) {
	srv := testutil.StartRedis(t)
	t.Setenv("PGW_REDIS_URL", "redis://127.0.0.1:1") // wrong on purpose: -redis wins
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	b, err := redis.NewBreaker(c, "OCR", gate.Policy{ConsecutiveFailures: 1}, redis.WithPrefix("blue"))
	require.NoError(t, err)
	trip(t, b, "vision")

	code, out, errOut := pgw("-redis", "redis://"+srv.Addr, "status", "-prefix", "blue")
	require.Equal(t, exitOK, code, errOut)
	rows := table(t, out)
	require.Len(t, rows, 1)
	assert.Equal(t, "open", rows["OCR/vision"]["STATE"])

	code, out, _ = pgw("-redis", "redis://"+srv.Addr, "status")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "no pgw state under prefix \"pgw\"\n", out, "another prefix's keys are not listed")
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		say  string
	}{
		{nil, "missing command"},
		{[]string{"stats"}, `unknown command "stats"`},
		{[]string{"status", "CHAT"}, "unexpected arguments"},
		{[]string{"open", "CHAT"}, "want SCOPE SOURCE"},
		{[]string{"-bogus", "status"}, "flag provided but not defined: -bogus"},
		{[]string{"-prefix", "a{b", "status"}, `invalid -prefix "a{b"`},
		{[]string{"-redis", "http://x", "status"}, "invalid -redis: invalid URL scheme"},
		{[]string{"help", "stats"}, `pgw help: unknown command "stats"`},
		{[]string{"-timeout", "0", "status"}, "invalid -timeout 0s"},
		{[]string{"status", "-timeout", "-1s"}, "invalid -timeout -1s"},
		{[]string{"-create", "open", "CH{AT", "a"}, `invalid SCOPE "CH{AT"`},
	} {
		code, out, errOut := pgw(tc.args...)
		assert.Equal(t, exitUsage, code, "%q", tc.args)
		assert.Empty(t, out, "%q", tc.args)
		assert.Contains(t, errOut, tc.say, "%q", tc.args)
	}
}

func TestHelpPrintsUsageAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"status", "-h"}, {"-help"}} {
		code, out, errOut := pgw(args...)
		assert.Equal(t, exitOK, code, "%q", args)
		assert.Contains(t, out, "usage: pgw [flags] status", "%q", args)
		assert.Contains(t, out, "-redis URL", "%q", args)
		assert.Empty(t, errOut, "%q", args)
	}
}

func TestHelpNeverShowsTheRedisURL(t *testing.T) {
	t.Setenv("PGW_REDIS_URL", "redis://:s3cret@10.0.0.1:6379/0")
	_, out, _ := pgw("-h")
	assert.NotContains(t, out, "s3cret")
}

func TestUnreachableRedisExitsOne(t *testing.T) {
	code, out, errOut := pgw("-redis", "redis://127.0.0.1:1", "-timeout", "2s", "status")
	assert.Equal(t, exitFail, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "pgw status: scanning keys")
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		ref  sourceRef
		kind string
		ok   bool
	}{
		{"pgw:{chat:openai}:cb", sourceRef{"CHAT", "openai"}, "cb", true},
		{"pgw:{chat:eu-1}:inflight", sourceRef{"CHAT", "eu-1"}, "inflight", true},
		{"pgw:{ocr:a:b}:quota", sourceRef{"OCR", "a:b"}, "quota", true},
		{"pgw:{chat}:cb", sourceRef{}, "", false},
		{"other:{chat:x}:cb", sourceRef{}, "", false},
	} {
		ref, kind, ok := parseKey("pgw:{", tc.key)
		assert.Equal(t, tc.ok, ok, tc.key)
		if tc.ok {
			assert.Equal(t, tc.ref, ref, tc.key)
			assert.Equal(t, tc.kind, kind, tc.key)
		}
	}
	assert.Equal(t, `a\*b\?c\[d\]`, globEscape("a*b?c[d]"))
}

func TestUsedDrainsTheBucketToNow(t *testing.T) {
	r := gate.NewRate(60) // one request per second drains
	level := 10 * r.Unit
	stamp := int64(1_000_000_000)
	str := func(v int64) any { return strconv.FormatInt(v, 10) }
	assert.Equal(t, "10/60", used(str(level), str(stamp), str(r.Unit), 60, stamp))
	assert.Equal(t, "7/60", used(str(level), str(stamp), str(r.Unit), 60, stamp+3_000_000))
	assert.Equal(t, "0/60", used(str(level), str(stamp), str(r.Unit), 60, stamp+3*60_000_000))
	assert.Equal(t, "≤10", used(str(level), str(stamp), str(r.Unit), 0, stamp+3_000_000), "limit unknown: the last level, an upper bound")
	assert.Equal(t, "0/60", used(nil, nil, nil, 60, stamp))
	assert.Equal(t, "-", used(nil, nil, nil, 0, stamp))
}

func TestHelpCommandPrintsTheUsageOrOneCommands(t *testing.T) {
	code, out, errOut := pgw("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "usage: pgw [flags] status")
	assert.Contains(t, out, "help [COMMAND]")
	assert.Empty(t, errOut)
	for _, cmd := range []string{"status", "open", "close", "reset"} {
		code, out, errOut = pgw("help", cmd)
		assert.Equal(t, exitOK, code, cmd)
		assert.Contains(t, out, "usage: pgw [flags] "+cmd, cmd)
		assert.Contains(t, out, "-redis URL", cmd)
		assert.Empty(t, errOut, cmd)
	}
}

// TestBadValuesNameWhereTheyCameFrom: a bad Redis URL or prefix from the
// environment is reported under its environment key, not as a flag, and the
// URL's password is never printed.
func TestBadValuesNameWhereTheyCameFrom(t *testing.T) {
	t.Setenv("PGW_REDIS_URL", "redis//:hunter2@127.0.0.1:6379/0")
	code, out, errOut := pgw("status")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "invalid PGW_REDIS_URL: invalid URL scheme")
	assert.NotContains(t, errOut, "-redis")
	assert.NotContains(t, errOut, "hunter2")

	t.Setenv("PGW_REDIS_URL", "redis://:hunter2@127.0.0.1:6379/zero")
	_, _, errOut = pgw("status")
	assert.Contains(t, errOut, "invalid PGW_REDIS_URL: invalid database number")
	assert.NotContains(t, errOut, "hunter2")

	t.Setenv("PGW_REDIS_URL", "")
	t.Setenv("PGW_REDIS_PREFIX", "a{b")
	_, _, errOut = pgw("status")
	assert.Contains(t, errOut, `invalid PGW_REDIS_PREFIX "a{b"`)
}

// TestCLIOutputHoldsNoSecret plants a marker secret in every secret-bearing
// key, valid and invalid, and runs the commands: it shows in no output.
func TestCLIOutputHoldsNoSecret(t *testing.T) {
	const marker = "MRKcli7Q"
	for _, env := range []map[string]string{
		{"PGW_REDIS_URL": "redis://:" + marker + "@127.0.0.1:1/0?dial_timeout=50ms"},
		{"PGW_REDIS_URL": "redis//:" + marker + "@127.0.0.1:1/0"},
		{"PGW_REDIS_URL": "redis:/:" + marker + "@h/0"},
		{"PGW_REDIS_URL": "redis://:" + marker + "@h:1/zero"},
		{"PGW_REDIS_URL": marker},
		{"CHAT__SOURCES": "a", "CHAT__A__API_KEY": marker + "\n", "PGW_REDIS_URL": "redis://127.0.0.1:1/0?dial_timeout=50ms"},
		{"CHAT__SOURCES": "a", "CHAT__A__API_KY": marker, "PGW_REDIS_URL": "redis://127.0.0.1:1/0?dial_timeout=50ms"},
		{"CHAT__SOURCES": "a", "CHAT__A__BASE_URL": "https//u:" + marker + "@h/v1", "PGW_REDIS_URL": "redis://127.0.0.1:1/0?dial_timeout=50ms"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		for _, args := range [][]string{{"status"}, {"-timeout", "1s", "open", "CHAT", "a"}, {"help"}, {"-h"}} {
			_, out, errOut := pgw(args...)
			assert.NotContains(t, out+errOut, marker, "%v %q", env, args)
		}
		for k := range env {
			t.Setenv(k, "")
		}
	}
}

// The error for an unknown source says to pass -create; an operator who
// appends it to the line that got the error must get the force, not a usage
// error.
func TestFlagsAfterTheArgumentsAreFlags(t *testing.T) {
	srv := testutil.StartRedis(t)
	gatewayEnv(t, srv.Addr)
	code, out, errOut := pgw("open", "CHAT", "opnai", "-create")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "CHAT/opnai: closed → open (forced until reset)\n", out)

	code, out, errOut = pgw("reset", "CHAT", "opnai", "-timeout", "5s")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "CHAT/opnai: open (forced until reset) → closed\n", out)

	code, _, errOut = pgw("open", "CHAT", "opnai", "-bogus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "flag provided but not defined: -bogus")

	code, _, errOut = pgw("open", "CHAT", "opnai", "extra", "-create")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `want SCOPE SOURCE, got ["CHAT" "opnai" "extra"]`)

	code, _, errOut = pgw("open", "--", "CHAT", "-create")
	assert.Equal(t, exitUsage, code, "after --, -create is the source's name")
	assert.Contains(t, errOut, `no pgw state for CHAT/-create`)
}

// A healthy source of a gateway without quotas may have no key in Redis but
// its advertised budget's: status lists it, so open, close and reset take
// it without -create.
func TestForceTakesASourceStatusListsByItsAdvertisedBudgetAlone(t *testing.T) {
	srv := testutil.StartRedis(t)
	t.Setenv("PGW_REDIS_URL", "redis://"+srv.Addr)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	bud, err := redis.NewBudget(c, "CHAT", redis.WithPrefix("pgw"))
	require.NoError(t, err)
	require.NoError(t, bud.Refresh(t.Context(), "solo", gate.Advertised{
		Requests: gate.AdvertisedWindow{Remaining: 99, Limit: 100, Reset: time.Minute},
		Tokens:   gate.AdvertisedWindow{Remaining: -1, Limit: -1},
	}))

	code, out, errOut := pgw("status")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, table(t, out), "CHAT/solo", "status lists the source")

	code, out, errOut = pgw("open", "CHAT", "solo")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "CHAT/solo: closed → open (forced until reset)\n", out)
	code, out, errOut = pgw("reset", "CHAT", "solo")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "CHAT/solo: open (forced until reset) → closed\n", out)
}

// A Redis that accepts connections and never answers: -timeout bounds the
// whole command, not go-redis's own dial and read timeouts (5 s and 3 s),
// which the command waited out before.
func TestSilentRedisEndsTheCommandAtItsTimeout(t *testing.T) {
	srv := testutil.StartRedis(t)
	px := testutil.StartProxy(t, srv.Addr)
	px.SetMode(testutil.ProxyBlackhole)
	for _, args := range [][]string{{"status"}, {"open", "-create", "CHAT", "solo"}} {
		start := time.Now()
		code, out, errOut := pgw(append([]string{"-redis", "redis://" + px.Addr(), "-timeout", "100ms"}, args...)...)
		took := time.Since(start)
		assert.Equal(t, exitFail, code, "%q: %s", args, errOut)
		assert.Empty(t, out, "%q", args)
		// Far under the read timeout, and far over the 100 ms bound, so a
		// loaded machine cannot make it fail.
		assert.Less(t, took, 2*time.Second, "%q ended at go-redis's timeouts, not -timeout", args)
	}
}
