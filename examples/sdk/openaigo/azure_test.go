package main

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// Azure sources behind plain openai-go: BASE_URL is the deployment's URL
// with its api-version, the SDK is pointed at pgw as for OpenAI, and pgw
// sends the source's key as api-key — never the SDK's Authorization.
func TestOpenAIGoAzureSourcesDeploymentPathAndAPIVersion(t *testing.T) {
	rec := &wire.Recorder{}
	primary, backup := wire.Start(t, wire.JSON(200, completion)), wire.Start(t, wire.JSON(200, completion))
	primary.Next(wire.JSON(503, openAIError("overloaded", "busy")))
	gw := wire.Gateway(t, wire.Env("CHAT", "azure",
		primary.URL+"/openai/deployments/gpt4o-eu?api-version=2024-10-21",
		backup.URL+"/openai/deployments/gpt4o-us?api-version=2024-10-21"), rec)
	client := openai.NewClient(
		option.WithBaseURL(pgw.SDKBaseURL),
		option.WithHTTPClient(gw.HTTPClient("CHAT")),
		option.WithMaxRetries(0),
		option.WithAPIKey("sk-of-the-app"),
	)
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	require.NoError(t, err)
	assert.Equal(t, "hi", resp.Choices[0].Message.Content)
	for _, tc := range []struct {
		s         *wire.Server
		path, key string
	}{{primary, "/openai/deployments/gpt4o-eu/chat/completions", "sk-primary"}, {backup, "/openai/deployments/gpt4o-us/chat/completions", "sk-backup"}} {
		require.Equal(t, 1, tc.s.Count())
		req := tc.s.Requests()[0]
		assert.Equal(t, tc.path, req.Path)
		assert.Equal(t, "api-version=2024-10-21", req.RawQuery)
		assert.Equal(t, tc.key, req.Header.Get("Api-Key"))
		assert.Empty(t, req.Header.Get("Authorization"), "the app's key never reaches Azure")
	}
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure, "backup:" + pgw.OutcomeSuccess}, rec.Outcomes())
}

// openai-go's azure option cannot be pointed at pgw: it refuses to send an
// Azure key to an http endpoint that is not loopback, and SDKBaseURL is
// http://pgw.invalid/. Nothing reaches a source; the way to Azure through
// pgw is plain openai-go with Azure sources (the test above).
func TestOpenAIGoAzureOptionRefusesSDKBaseURL(t *testing.T) {
	rec := &wire.Recorder{}
	primary, backup := wire.Start(t, wire.JSON(200, completion)), wire.Start(t, wire.JSON(200, completion))
	gw := wire.Gateway(t, wire.Env("CHAT", "azure", primary.URL, backup.URL), rec)
	for _, unsafe := range []bool{false, true} {
		opts := []option.RequestOption{
			azure.WithEndpoint(pgw.SDKBaseURL, "2024-10-21"),
			azure.WithAPIKey("set-by-pgw"),
			option.WithHTTPClient(gw.HTTPClient("CHAT")),
			option.WithMaxRetries(0),
		}
		if unsafe {
			opts = append(opts, azure.WithUnsafeAllowHTTP())
		}
		client := openai.NewClient(opts...)
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt4o-deployment",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		})
		require.Error(t, err, "WithUnsafeAllowHTTP %v", unsafe)
		assert.Contains(t, err.Error(), "HTTPS")
	}
	assert.Zero(t, primary.Count()+backup.Count())
	assert.Empty(t, rec.Calls(), "no governed call was made")
}
