package main

// go-openai through pgw's governed client: a stream cut after its first
// content reaches the SDK as an error, never as the clean end of a shorter
// answer.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/examples/sdk/internal/wire"
)

// go-openai's stream returns whatever error its body's read gives: were it
// io.EOF, a cut answer would look whole. The governed body's cut matches
// io.ErrUnexpectedEOF, the call is the source's failure, and no backup is
// asked once content reached the caller.
func TestGoOpenAIStreamCutAfterContentIsAnUnexpectedEOF(t *testing.T) {
	r := newGovRig(t, wire.Events(chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"one "}`, "")))
	stream, err := r.client.CreateChatCompletionStream(context.Background(), request("hello"))
	require.NoError(t, err)
	var got string
	for {
		resp, err := stream.Recv()
		if err != nil {
			require.False(t, errors.Is(err, io.EOF), "a cut stream must not end as io.EOF: %v", err)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			break
		}
		if len(resp.Choices) > 0 {
			got += resp.Choices[0].Delta.Content
		}
	}
	stream.Close()
	assert.Equal(t, "one ", got)
	require.Eventually(t, func() bool { return len(r.rec.Calls()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"primary:" + pgw.OutcomeFailure}, r.rec.Outcomes())
	assert.Equal(t, 0, r.backup.Count(), "content reached the caller: no fail-over")
}

// An upstream that echoes the request's key in its error: the error go-openai
// returns — inside pgw.Call, and through the governed client — shows none
// of it, and errors.As still reaches the SDK's *APIError.
func TestGoOpenAIEchoedKeyIsInNoErrorText(t *testing.T) {
	const key = "sk-echoed-0123456789abcdef"
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"bad model for key %s","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	r := newGovRig(t, echo, "PRIMARY__API_KEY", key, "BACKUP__API_KEY", key)

	_, err := pgw.Call(context.Background(), r.gw, "CHAT", func(ctx context.Context, src pgw.Source) (string, pgw.Usage, error) {
		cfg := goopenai.DefaultConfig(src.APIKey.Reveal())
		cfg.BaseURL = src.BaseURL
		_, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, request("hello"))
		return "", pgw.Usage{}, err
	})
	var apiErr *goopenai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Contains(t, apiErr.Message, key, "the SDK's own value is as it built it")
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, fmt.Sprintf("%+v", err), key)
	assert.Contains(t, err.Error(), "bad model for key")

	_, err = Ask(context.Background(), r.client, "hello")
	apiErr = nil
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.HTTPStatusCode)
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, apiErr.Message, key, "the body the SDK got was redacted")
	assert.Equal(t, 0, r.backup.Count(), "a bad request is not re-sent")
}
