package pgw_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// callerHTTPError is the *pgw.HTTPError a Call function builds itself,
// copying an SDK's text into its Message: the source's key, a value of its
// BASE_URL's query and a proxy's key the upstream echoed.
func callerHTTPError(src pgw.Source, status int) *pgw.HTTPError {
	return &pgw.HTTPError{StatusCode: status, Message: fmt.Sprintf(
		"%s: key %s at ?token=%s; headers: Authorization: Bearer %s, x-api-key: %s",
		upstreamMsg, src.APIKey.Reveal(), echoToken, proxyKey, proxyKey)}
}

// A Call function that returns a *pgw.HTTPError of its own making, as it
// is or wrapped, whose Message holds credentials: the error Call returns,
// its %+v, the Message errors.As finds, the wrappers of the last attempt
// and the records and logs show none of them, yet keep the upstream's
// message and the status.
func TestCallRedactsTheMessageOfAnHTTPErrorItBuilt(t *testing.T) {
	wraps := map[string]func(*pgw.HTTPError) error{
		"as it is": func(he *pgw.HTTPError) error { return he },
		"wrapped":  func(he *pgw.HTTPError) error { return fmt.Errorf("sdk call: %w", he) },
	}
	for name, wrap := range wraps {
		for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError} {
			t.Run(fmt.Sprintf("%s/%d", name, status), func(t *testing.T) {
				gw, rec, logs := sdkGateway(t, []string{"CHAT__MAX_ATTEMPTS", "2"})
				_, err := pgw.Call(context.Background(), gw, "CHAT", func(_ context.Context, src pgw.Source) (string, pgw.Usage, error) {
					return "", pgw.Usage{}, wrap(callerHTTPError(src, status))
				})
				require.Error(t, err)
				requireNoSecretIn(t, "err.Error()", err.Error())
				requireNoSecretIn(t, "%+v", fmt.Sprintf("%+v", err))
				assert.Contains(t, err.Error(), upstreamMsg)
				assert.Contains(t, err.Error(), "Authorization: Bearer [redacted]")
				var he *pgw.HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, status, he.StatusCode)
				requireNoSecretIn(t, "HTTPError.Message", he.Message)
				assert.Contains(t, he.Message, upstreamMsg)
				if status == http.StatusInternalServerError {
					var gue *pgw.GatewayUnavailableError
					require.ErrorAs(t, err, &gue)
					requireNoSecretIn(t, "Last.Error()", gue.Last.Error())
				}
				requireCleanRecords(t, rec, logs)
			})
		}
	}
}

// A Call function's *pgw.HTTPError whose Message holds no credential is
// returned as it was built.
func TestCallKeepsTheMessageOfAnHTTPErrorWithoutCredentials(t *testing.T) {
	gw, _, _ := sdkGateway(t, nil)
	const msg = "model not found; check the authorization settings"
	sent := &pgw.HTTPError{StatusCode: http.StatusNotFound, Message: msg}
	_, err := pgw.Call(context.Background(), gw, "CHAT", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		return "", pgw.Usage{}, sent
	})
	var he *pgw.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, msg, he.Message)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	sentinel := errors.New("the caller's own")
	_, err = pgw.Call(context.Background(), gw, "CHAT", func(context.Context, pgw.Source) (string, pgw.Usage, error) {
		return "", pgw.Usage{}, fmt.Errorf("%w: %w", sentinel, &pgw.HTTPError{StatusCode: http.StatusNotFound, Message: "x-api-key: " + proxyKey})
	})
	require.ErrorIs(t, err, sentinel, "errors.Is still reaches what the error wraps")
	requireNoSecretIn(t, "err.Error()", err.Error())
}
