package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSourcesOfAnUnlistedScopeInTheWrongCaseIsReported: OCR__SOURCES of a
// scope an explicit PGW_SCOPES leaves out is a problem; so is ocr__sources,
// which is that key but for its case — before, it was silent twice over
// (not upper-case, and not listed).
func TestSourcesOfAnUnlistedScopeInTheWrongCaseIsReported(t *testing.T) {
	for _, name := range []string{"ocr__sources", "Ocr__Sources", "my_scope__SOURCES"} {
		ce := mustFail(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", name: "o"})
		assert.Equal(t, []string{name}, keys(ce), "%v", ce)
		legal := problem(t, ce, name).Legal
		assert.Contains(t, legal, "is not in PGW_SCOPES (CHAT)", name)
		assert.Contains(t, legal, "__SOURCES?", name)
	}
	// A listed scope's SOURCES in the wrong case is a near miss as before.
	ce := mustFail(t, map[string]string{"PGW_SCOPES": "CHAT,OCR", "CHAT__SOURCES": "a", "ocr__sources": "o"})
	assert.Contains(t, problem(t, ce, "ocr__sources").Legal, "did you mean OCR__SOURCES?")
	// Names that are no scope's, in any case, are left alone.
	mustLoad(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "a", "1x__sources": "o", "a-b__sources": "o"})
}
