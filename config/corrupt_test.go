package config

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pgw-go/pgw/internal/errs"
)

// validEnvs are environments FromMap accepts; the corruption tests mistype
// their keys one character at a time.
var validEnvs = []map[string]string{
	{"CHAT__SOURCES": "a"},
	{
		"CHAT__SOURCES": "primary,backup", "CHAT__PRIMARY__BASE_URL": "https://p.example.com/v1",
		"CHAT__PRIMARY__API_KEY": "sk-p", "CHAT__BACKUP__BASE_URL": "https://b.example.com/v1",
		"CHAT__BACKUP__API_KEY": "sk-b", "CHAT__BACKUP__PROVIDER": "azure", "CHAT__CIRCUIT_OPEN": "wait",
		"CHAT__COOLDOWN_S": "30", "CHAT__PRIMARY__RPM": "600", "PGW_BREAKER_BACKEND": "redis",
		"PGW_REDIS_URL": "redis://:pw@127.0.0.1:6379/0", "PGW_REDIS_PREFIX": "svc",
		"EMBEDDING__SOURCES": "eu-1", "EMBEDDING__EU_1__BATCH_SIZE": "64", "PATH": "/bin", "HOME": "/root",
	},
	{
		"PGW_SCOPES": "MY_SCOPE,OCR", "MY_SCOPE__SOURCES": "x1,y_2", "MY_SCOPE__X1__WEIGHT": "3",
		"MY_SCOPE__Y_2__PRIORITY": "-1", "MY_SCOPE__MAX_ATTEMPTS": "4", "OCR__SOURCES": "o",
		"OCR__O__TIMEOUT_S": "0.5", "PGW_REDIS_DOWN": "fail_closed",
	},
}

// corruptions returns every single-character corruption of key: each
// character deleted, replaced (by '_', 'X', '0' or its other case), a
// character inserted (of the same set) at each position, and each pair of
// neighbours swapped.
func corruptions(key string) []string {
	var out []string
	for i := 0; i <= len(key); i++ {
		for _, c := range []byte{'_', 'X', '0'} {
			out = append(out, key[:i]+string(c)+key[i:])
		}
		if i == len(key) {
			break
		}
		out = append(out, key[:i]+key[i+1:])
		subs := []byte{'_', 'X', '0'}
		if c := key[i]; c >= 'A' && c <= 'Z' {
			subs = append(subs, c+'a'-'A')
		}
		for _, c := range subs {
			if c != key[i] {
				out = append(out, key[:i]+string(c)+key[i+1:])
			}
		}
		if i+1 < len(key) && key[i] != key[i+1] {
			out = append(out, key[:i]+string(key[i+1])+string(key[i])+key[i+2:])
		}
	}
	return out
}

// checkCorruption renames key to bad in env and asserts that FromMap
// reports bad, unless bad is itself a key pgw reads (RPM → TPM) or is
// already set.
func checkCorruption(t *testing.T, env map[string]string, key, bad string) {
	t.Helper()
	if _, taken := env[bad]; taken || bad == "" {
		return
	}
	env2 := maps.Clone(env)
	delete(env2, key)
	env2[bad] = env[key]
	// The oracle for "a key pgw reads" is the parser itself: it looks up
	// exactly the keys it reads.
	read := map[string]bool{}
	_, _ = FromLookup(func(k string) (string, bool) {
		read[k] = true
		v, ok := env2[k]
		return v, ok
	})
	if read[bad] {
		return
	}
	_, err := FromMap(env2)
	ce, _ := err.(*errs.ConfigError)
	if ce == nil || !slices.ContainsFunc(ce.Problems, func(p errs.Problem) bool { return p.Key == bad }) {
		t.Fatalf("%s mistyped as %q is not reported: %v", key, bad, err)
	}
	if strings.Contains(ce.Error(), "sk-") || strings.Contains(ce.Error(), ":pw@") {
		t.Fatalf("a secret in the error: %v", ce)
	}
}

// TestEveryOneCharacterKeyCorruptionIsReported is the property over every
// key of every valid environment and every corruption of it.
func TestEveryOneCharacterKeyCorruptionIsReported(t *testing.T) {
	n := 0
	for _, env := range validEnvs {
		if _, err := FromMap(env); err != nil {
			t.Fatalf("environment not valid: %v", err)
		}
		for key := range env {
			if key == "PATH" || key == "HOME" {
				continue
			}
			for _, bad := range corruptions(key) {
				checkCorruption(t, env, key, bad)
				n++
			}
		}
	}
	t.Logf("%d corruptions checked", n)
}

// FuzzKeyCorruption explores the same property with any replacement byte
// of the key alphabet; its seed corpus runs in every `go test`.
func FuzzKeyCorruption(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(5), uint8(0), byte('B'))
	f.Add(uint8(1), uint8(3), uint8(8), uint8(1), byte('K'))
	f.Add(uint8(1), uint8(7), uint8(0), uint8(2), byte('c'))
	f.Add(uint8(2), uint8(1), uint8(12), uint8(3), byte('-'))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
	f.Fuzz(func(t *testing.T, envIdx, keyIdx, pos, op uint8, c byte) {
		env := validEnvs[int(envIdx)%len(validEnvs)]
		keys := slices.Sorted(maps.Keys(env))
		key := keys[int(keyIdx)%len(keys)]
		if key == "PATH" || key == "HOME" {
			return
		}
		i := int(pos) % (len(key) + 1)
		ch := string(alphabet[int(c)%len(alphabet)])
		var bad string
		switch op % 4 {
		case 0: // insert
			bad = key[:i] + ch + key[i:]
		case 1: // replace
			if i == len(key) {
				return
			}
			bad = key[:i] + ch + key[i+1:]
		case 2: // delete
			if i == len(key) {
				return
			}
			bad = key[:i] + key[i+1:]
		default: // swap with the next
			if i+1 >= len(key) {
				return
			}
			bad = key[:i] + string(key[i+1]) + string(key[i]) + key[i+2:]
		}
		if bad == key {
			return
		}
		checkCorruption(t, env, key, bad)
	})
}
