package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTheSameProblemIsReportedOnce: a list with several empty items, or the
// same bad item twice, is one problem of its key, not one per item — the
// error's count says how many things there are to fix.
func TestTheSameProblemIsReportedOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		key  string
	}{
		{"sources of empty items", base("CHAT__SOURCES", " , "), "CHAT__SOURCES"},
		{"sources with the same bad name twice", base("CHAT__SOURCES", "a,b.c,b.c"), "CHAT__SOURCES"},
		{"scopes of empty items", base("PGW_SCOPES", "CHAT,,,"), "PGW_SCOPES"},
		{"scopes with the same bad name twice", base("PGW_SCOPES", "CHAT,chat,chat"), "PGW_SCOPES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := mustFail(t, tc.env)
			n := 0
			for _, p := range ce.Problems {
				if p.Key == tc.key {
					n++
				}
			}
			assert.Equal(t, 1, n, "%v", ce)
		})
	}
}
