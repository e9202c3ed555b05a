package errs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigErrorListsEveryProblemSortedByKey(t *testing.T) {
	e := &ConfigError{Problems: []Problem{
		{Key: "PGW_REDIS_DOWN", Value: "maybe", Legal: "fail_open, fail_closed"},
		{Key: "CHAT__COOLDOWN_S", Value: "-1", Legal: "seconds"},
		{Key: "CHAT__A__API_KEY", Value: "<redacted>", Legal: "text"},
	}}
	assert.Equal(t,
		`pgw: invalid configuration (3 problems): `+
			`CHAT__A__API_KEY="<redacted>" (legal: text); `+
			`CHAT__COOLDOWN_S="-1" (legal: seconds); `+
			`PGW_REDIS_DOWN="maybe" (legal: fail_open, fail_closed)`,
		e.Error())
	// Error sorts a copy: the caller's order is left alone.
	assert.Equal(t, "PGW_REDIS_DOWN", e.Problems[0].Key)
}

func TestConfigErrorQuotesValuesWithControlCharacters(t *testing.T) {
	e := &ConfigError{Problems: []Problem{{Key: "K", Value: "a\nb", Legal: "x"}}}
	assert.Equal(t, `pgw: invalid configuration (1 problem): K="a\nb" (legal: x)`, e.Error())
}

func TestConfigErrorCodeAndAs(t *testing.T) {
	var err error = fmt.Errorf("starting: %w", &ConfigError{Problems: []Problem{{Key: "K"}}})
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "PGW-CONFIG", ce.Code())
	assert.Equal(t, CodeConfig, ce.Code())
}

func TestSortProblemsIsByKeyThenLegal(t *testing.T) {
	ps := []Problem{{Key: "B", Legal: "2"}, {Key: "A", Legal: "z"}, {Key: "B", Legal: "1"}}
	SortProblems(ps)
	assert.Equal(t, []Problem{{Key: "A", Legal: "z"}, {Key: "B", Legal: "1"}, {Key: "B", Legal: "2"}}, ps)
}
