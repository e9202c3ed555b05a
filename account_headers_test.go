package pgw_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/internal/testutil"
)

// A fail-over from a source of one OpenAI organization to one of another
// sends the backup's own ORGANIZATION and PROJECT, not the SDK's: OpenAI
// refuses a key with another organization's header (401), which would open
// the backup's breaker just when it is needed. A source without them gets
// the SDK's headers as they were.
func TestHTTPClientSendsEachSourcesOrganizationAndProject(t *testing.T) {
	gw, _, primary, backup := twoSources(t, map[string]string{
		"CHAT__BACKUP__ORGANIZATION": "org-backup",
		"CHAT__BACKUP__PROJECT":      "proj-backup",
	})
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	resp := postWith(t, gw.HTTPClient("CHAT"), map[string]string{"OpenAI-Organization": "org-sdk", "OpenAI-Project": "proj-sdk"})
	require.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))

	p := primary.LastRequest(testutil.Chat).Header
	assert.Equal(t, "org-sdk", p.Get("OpenAI-Organization"), "a source without ORGANIZATION keeps the SDK's")
	assert.Equal(t, "proj-sdk", p.Get("OpenAI-Project"))
	b := backup.LastRequest(testutil.Chat).Header
	assert.Equal(t, []string{"org-backup"}, b.Values("OpenAI-Organization"))
	assert.Equal(t, []string{"proj-backup"}, b.Values("OpenAI-Project"))
}

// An Azure or Anthropic source is told no OpenAI account.
func TestHTTPClientSendsNoOpenAIAccountToAnotherProvider(t *testing.T) {
	gw, _, primary, _ := twoSources(t, map[string]string{"CHAT__PRIMARY__PROVIDER": "azure"})
	resp := postWith(t, gw.HTTPClient("CHAT"), map[string]string{"OpenAI-Organization": "org-sdk", "OpenAI-Project": "proj-sdk"})
	require.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	require.Equal(t, 1, primary.Requests(testutil.Chat))
	h := primary.LastRequest(testutil.Chat).Header
	require.Equal(t, "sk-primary", h.Get("Api-Key"), "Azure's credential header")
	assert.Empty(t, h.Values("OpenAI-Organization"))
	assert.Empty(t, h.Values("OpenAI-Project"))
}

// pgw's own OpenAI transport sends a source's ORGANIZATION and PROJECT, and
// nothing for a source without them.
func TestChatSendsTheSourcesOrganizationAndProject(t *testing.T) {
	gw, _, primary, backup := twoSources(t, map[string]string{
		"CHAT__BACKUP__ORGANIZATION": "org-backup",
		"CHAT__BACKUP__PROJECT":      "proj-backup",
	})
	primary.Enqueue(testutil.Chat, testutil.Reply{Status: http.StatusServiceUnavailable})
	_, err := gw.Chat(t.Context(), hello())
	require.NoError(t, err)
	require.Equal(t, 1, primary.Requests(testutil.Chat))
	p := primary.LastRequest(testutil.Chat).Header
	require.NotEmpty(t, p.Get("Authorization"))
	assert.Empty(t, p.Values("OpenAI-Organization"))
	assert.Empty(t, p.Values("OpenAI-Project"))
	b := backup.LastRequest(testutil.Chat).Header
	assert.Equal(t, "org-backup", b.Get("OpenAI-Organization"))
	assert.Equal(t, "proj-backup", b.Get("OpenAI-Project"))
}

// postWith posts a chat request through hc with the given extra headers.
func postWith(t *testing.T, hc *http.Client, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, pgw.SDKBaseURL+"chat/completions", strings.NewReader(chatBody(false)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	return resp
}
