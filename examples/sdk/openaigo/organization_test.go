package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// onlyOrg answers as OpenAI does for a key of organization org: a request
// naming another organization is refused with 401 mismatched_organization.
func onlyOrg(org string) http.HandlerFunc {
	ok, refused := wire.JSON(200, completion),
		wire.JSON(401, openAIError("mismatched_organization", "OpenAI-Organization header should match organization for API key"))
	return func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("OpenAI-Organization"); got != "" && got != org {
			refused(w, r)
			return
		}
		ok(w, r)
	}
}

// openai-go configured for one organization (option.WithOrganization, as
// OPENAI_ORG_ID does) fails over to a backup whose key belongs to another:
// the backup's ORGANIZATION replaces the SDK's header, so the backup
// answers instead of refusing the call and opening its breaker.
func TestOpenAIGoFailsOverToAKeyOfAnotherOrganization(t *testing.T) {
	r := newGovRig(t, wire.JSON(200, completion),
		[]string{"BACKUP__ORGANIZATION", "org-backup", "BACKUP__PROJECT", "proj_backup"},
		option.WithOrganization("org-primary"), option.WithProject("proj_primary"))
	r.primary.Next(wire.JSON(503, openAIError("overloaded", "busy")))
	r.backup.Next(onlyOrg("org-backup"))
	resp, err := r.ask(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Choices[0].Message.Content)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, r.rec.Outcomes())
	assert.Equal(t, pgw.StateClosed, wire.State(t, r.gw, "CHAT", "backup").State)

	require.Equal(t, 1, r.primary.Count())
	p := r.primary.Requests()[0].Header
	assert.Equal(t, "org-primary", p.Get("OpenAI-Organization"), "a source without ORGANIZATION gets the SDK's")
	assert.Equal(t, "proj_primary", p.Get("OpenAI-Project"))
	require.Equal(t, 1, r.backup.Count())
	b := r.backup.Requests()[0].Header
	assert.Equal(t, []string{"org-backup"}, b.Values("OpenAI-Organization"))
	assert.Equal(t, []string{"proj_backup"}, b.Values("OpenAI-Project"))
}
