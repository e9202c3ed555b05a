package config_test

import (
	"errors"
	"fmt"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
)

func ExampleFromLookup() {
	env := map[string]string{
		"PGW_SCOPES":             "CHAT",
		"CHAT__SOURCES":          "eu-1,backup",
		"CHAT__CIRCUIT_OPEN":     "wait",
		"CHAT__EU_1__BASE_URL":   "https://eu.example.com/v1",
		"CHAT__EU_1__API_KEY":    "sk-live-123",
		"CHAT__EU_1__TIMEOUT_S":  "2.5",
		"CHAT__BACKUP__PRIORITY": "1",
	}
	s, err := config.FromLookup(func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	chat, _ := s.Scope("CHAT")
	eu := chat.Sources[0]
	fmt.Println(chat.CircuitOpen, chat.MaxAttempts, chat.Policy().Cooldown)
	fmt.Println(eu.Name, eu.Timeout, eu.APIKey) // the key prints redacted

	env["CHAT__EU_1__TIMEOUT_S"] = "-1"
	env["CHAT__QUOTA_FULL"] = "sometimes"
	_, err = config.FromLookup(func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	var ce *errs.ConfigError // pgw.ConfigError in the root package
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Printf("%s=%q: %s\n", p.Key, p.Value, p.Legal)
		}
	}
	// Output:
	// wait 6 1m0s
	// eu-1 2.5s <redacted>
	// CHAT__EU_1__TIMEOUT_S="-1": seconds (fractions allowed) in [0.001, 10000000]
	// CHAT__QUOTA_FULL="sometimes": wait, fail_fast
}
