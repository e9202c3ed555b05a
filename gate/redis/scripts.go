package redis

import (
	"embed"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The four scripts, one per gate operation. Each is the shared prelude
// (lua/common.lua: record layout and state-machine helpers) followed by the
// operation's body, so Lua code exists once yet every operation is one script
// and one EVALSHA. go-redis runs them with EVALSHA and falls back to EVAL on
// NOSCRIPT (a flushed or restarted server, a cluster node that never saw the
// script).
var (
	scriptTryEnter   = newScript("try_enter.lua")
	scriptRecord     = newScript("record.lua")
	scriptSnapshot   = newScript("snapshot.lua")
	scriptRetryAfter = newScript("retry_after.lua")
)

func newScript(body string) *goredis.Script {
	return goredis.NewScript(mustRead("lua/common.lua") + "\n" + mustRead("lua/"+body))
}

func mustRead(name string) string {
	b, err := luaFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("pgw/gate/redis: embedded script %s missing: %v", name, err))
	}
	return string(b)
}
