package provider_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/provider"
)

// errorReadKey is the credential the ReadErrorBody tests plant.
const errorReadKey = "sk-live-0123456789"

// bodyWith is a body of content type ct longer than provider.MaxErrorBody
// whose text shows secret (as written in the body) from byte at.
func bodyWith(ct, secret string, at int) string {
	head, tail := "", ""
	switch ct {
	case "json":
		head, tail = `{"error":{"message":"`, `"}}`
	case "html":
		head, tail = "<html><body><p>", "</p></body></html>"
	}
	at = max(at, len(head))
	return head + strings.Repeat("x", at-len(head)) + secret + strings.Repeat("x", provider.MaxErrorBody) + tail
}

// No part of a credential survives ReadErrorBody wherever it falls in a
// long body: at the start, in the middle, across the cut at every split,
// past the cut; in JSON, HTML and plain text.
func TestReadErrorBodyLeavesNoPartOfACredential(t *testing.T) {
	creds := []string{errorReadKey}
	for _, ct := range []string{"json", "html", "text"} {
		at := map[string]int{"start": 0, "middle": provider.MaxErrorBody / 2, "past the cut": provider.MaxErrorBody + 1}
		for k := 1; k < len(errorReadKey); k++ {
			at[fmt.Sprintf("across the cut after %d bytes", k)] = provider.MaxErrorBody - k
		}
		for where, i := range at {
			got := string(provider.ReadErrorBody(strings.NewReader(bodyWith(ct, errorReadKey, i)), creds))
			require.LessOrEqual(t, len(got), provider.MaxErrorBody, "%s %s", ct, where)
			assert.NotContains(t, got, errorReadKey[:2], "%s %s", ct, where)
			if where == "start" || where == "middle" {
				assert.Contains(t, got, provider.Redacted, "%s %s", ct, where)
			}
		}
	}
}

// A credential escaped in a JSON string is found whole in a body cut in
// that string, and its head is dropped when the cut falls across it.
func TestReadErrorBodyFindsAnEscapedCredentialInACutString(t *testing.T) {
	creds := []string{errorReadKey}
	escaped := `\u0073k\u002dlive-01234\"56789`
	creds = append(creds, `sk-live-01234"56789`)
	for _, i := range []int{provider.MaxErrorBody / 2, provider.MaxErrorBody - 3, provider.MaxErrorBody - 8, provider.MaxErrorBody - 14, provider.MaxErrorBody - 20} {
		got := string(provider.ReadErrorBody(strings.NewReader(bodyWith("json", escaped, i)), creds))
		assert.NotContains(t, got, `\u0073`, i)
		assert.NotContains(t, got, `sk`, i)
		if i == provider.MaxErrorBody/2 {
			assert.Contains(t, got, provider.Redacted)
		}
	}
}

// A body cut in the middle of a rune loses that rune, so that its text is
// still UTF-8 (and becomes the error's message); a shorter body is
// returned as it was, but for the credentials.
func TestReadErrorBodyCutsOnARuneAndKeepsAShortBody(t *testing.T) {
	long := strings.Repeat("x", provider.MaxErrorBody-1) + "é and more"
	got := provider.ReadErrorBody(strings.NewReader(long), nil)
	assert.True(t, utf8.Valid(got))
	assert.Len(t, got, provider.MaxErrorBody-1)

	short := `{"error":{"message":"bad key ` + errorReadKey + `"}}`
	assert.Equal(t, `{"error":{"message":"bad key [redacted]"}}`, string(provider.ReadErrorBody(strings.NewReader(short), []string{errorReadKey})))
}
