package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// TestPublicErrorsAreDefinedHereWithTheirFields: the public errors are
// struct types of this package, not aliases of an internal one, so go doc
// shows their fields at the name users type.
func TestPublicErrorsAreDefinedHereWithTheirFields(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	require.NoError(t, err)
	want := map[string]string{
		"CircuitOpenError": "RetryAfter", "AllSourcesExhausted": "RetryAfter", "GatewayUnavailableError": "Attempts",
		"BatchError": "Failed", "BatchFailure": "Err", "HTTPError": "StatusCode", "ConfigError": "Problems", "ConfigProblem": "Unset",
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			ts, ok := s.(*ast.TypeSpec)
			if !ok || want[ts.Name.Name] == "" {
				continue
			}
			assert.False(t, ts.Assign.IsValid(), "%s is an alias", ts.Name.Name)
			st, ok := ts.Type.(*ast.StructType)
			require.True(t, ok, "%s is a struct", ts.Name.Name)
			var fields []string
			for _, fl := range st.Fields.List {
				for _, n := range fl.Names {
					fields = append(fields, n.Name)
				}
			}
			assert.Contains(t, fields, want[ts.Name.Name], ts.Name.Name)
			delete(want, ts.Name.Name)
		}
	}
	assert.Empty(t, want, "types not defined in errors.go")
}

// TestErrorsOfTheGatewayAreThePublicTypes: what the facade returns prints
// as *pgw.X, reaches the public types with errors.As — down the chain too —
// and a *pgw.HTTPError a Call function returns is classified by status.
func TestErrorsOfTheGatewayAreThePublicTypes(t *testing.T) {
	gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "only", "RERANK__COOLDOWN_S": "60"})
	bad := &pgw.HTTPError{StatusCode: 401, Message: "invalid api key"}
	_, err := pgw.Call(context.Background(), gw, "RERANK", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		return "", pgw.Usage{}, bad
	})
	assert.Equal(t, "*pgw.CircuitOpenError", fmt.Sprintf("%T", err), "the 401 opened the breaker at once: %v", err)
	var coe *pgw.CircuitOpenError
	require.ErrorAs(t, err, &coe)
	assert.Equal(t, []string{"only"}, coe.Sources)
	assert.InDelta(t, 60*time.Second, coe.RetryAfter, float64(time.Second))
	assert.Equal(t, pgw.CodeCircuitOpen, coe.Code())
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he, "the 401 that opened it is reachable")
	assert.Equal(t, 401, he.StatusCode)
	assert.Equal(t, "only", he.Source)
	assert.Empty(t, bad.Source, "the caller's error is not modified")

	// A 429 with Retry-After from a Call function holds the source off.
	gw2, _ := newGateway(t, map[string]string{"PGW_SCOPES": "RERANK", "RERANK__SOURCES": "a,b", "RERANK__A__PRIORITY": "0", "RERANK__B__PRIORITY": "1"})
	v, err := pgw.Call(context.Background(), gw2, "RERANK", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
		if src.Name == "a" {
			return "", pgw.Usage{}, &pgw.HTTPError{StatusCode: 429, RetryAfter: 30 * time.Second, Message: "slow down"}
		}
		return "ok@" + src.Name, pgw.Usage{}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok@b", v)
	adm, err := gw2.Admission("RERANK")
	require.NoError(t, err)
	assert.InDelta(t, 30*time.Second, adm.Memo().Remaining("a", time.Now()), float64(2*time.Second), "held off for its Retry-After")
}

// TestConfigErrorsOfThePackagesReachThePublicType: config.FromEnv returns
// the lower package's error; errors.As into *pgw.ConfigError still works,
// and the gateway's constructors return the public type itself.
func TestConfigErrorsOfThePackagesReachThePublicType(t *testing.T) {
	_, err := config.FromMap(map[string]string{"CHAT__SOURCES": "a", "CHAT__COOLDOWN_S": "x"})
	var ce *pgw.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Problems, 1)
	assert.Equal(t, "CHAT__COOLDOWN_S", ce.Problems[0].Key)

	_, err = pgw.New(context.Background(), pgw.Settings{Scopes: []pgw.ScopeSettings{{Name: "CHAT", Sources: []pgw.Source{{Name: "a"}}}}})
	assert.Equal(t, "*pgw.ConfigError", fmt.Sprintf("%T", err))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []pgw.ConfigProblem{{Key: "CHAT__A__BASE_URL", Unset: true, Legal: ce.Problems[0].Legal}}, ce.Problems)
	assert.Contains(t, err.Error(), "CHAT__A__BASE_URL unset (legal: ")
	assert.True(t, errors.Is(err, err))
}
