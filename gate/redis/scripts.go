package redis

import (
	"embed"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The four breaker scripts, one per gate operation. Each is the shared
// preludes (lua/clock.lua: numbers and the server clock; lua/common.lua:
// record layout and state-machine helpers) followed by the operation's
// body, so Lua code exists once yet every operation is one script and one
// EVALSHA. go-redis runs them with EVALSHA and falls back to EVAL on
// NOSCRIPT (a flushed or restarted server, a cluster node that never saw the
// script).
//
// TryEnter and Record, which run on every call, start with their fast path
// (lua/fast.lua) and wrap the state machine in a function that runs only
// when the fast path cannot decide (fastScript).
var (
	scriptTryEnter   = fastScript("try_enter")
	scriptRecord     = fastScript("record")
	scriptSnapshot   = newScript("snapshot.lua")
	scriptRetryAfter = newScript("retry_after.lua")
	// scriptProbeForget frees a probe lease whose grant's reply was lost
	// (Breaker.forgetProbe); it needs no prelude.
	scriptProbeForget = newLua(mustRead("lua/probe_forget.lua"))
)

func newScript(body string) *script {
	return newLua(lua("clock.lua", "common.lua", body))
}

// fastScript is the operation op (lua/<op>.lua) behind its fast path:
// <op>_fast (lua/fast.lua) decides the common case from one read, and only
// what it leaves undecided pays for the state machine's definitions and
// runs <op>.lua as the function <op>_body.
func fastScript(op string) *script {
	return newLua(lua("clock.lua", "fast.lua") + body(op+"_body", "common.lua", op+".lua") +
		"return " + op + "_fast(KEYS, ARGV) or " + op + "_body(KEYS, ARGV)\n")
}

// script is a gate script with its source, which the EVAL after a NOSCRIPT
// reply needs (runScript).
type script struct {
	*goredis.Script
	src string
}

func newLua(src string) *script { return &script{Script: goredis.NewScript(src), src: src} }

// lua joins the embedded files named into one script's source.
func lua(files ...string) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(mustRead("lua/" + f))
		b.WriteByte('\n')
	}
	return b.String()
}

// body wraps the embedded files, a prelude and a script body, as one local
// function of (KEYS, ARGV), so that a combined script runs the body
// unchanged and pays for the prelude's definitions only when it calls it.
func body(name string, files ...string) string {
	return "local function " + name + "(KEYS, ARGV)\n" + lua(files...) + "end\n"
}

func mustRead(name string) string {
	b, err := luaFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("pgw/gate/redis: embedded script %s missing: %v", name, err))
	}
	return string(b)
}
