package main

import (
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestMain quiets go-redis's own dial-failure lines, as main does.
func TestMain(m *testing.M) {
	goredis.SetLogger(quiet{})
	os.Exit(m.Run())
}
