package openai_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/observe"
	"github.com/pgw-go/pgw/openai"
	"github.com/pgw-go/pgw/transport"
)

// recordingHooks are an observer's attempt hooks: a header to send and the
// models the transport reports.
type recordingHooks struct {
	mu     sync.Mutex
	models []string
}

func (h *recordingHooks) InjectHeaders(hd http.Header) { hd.Set("Traceparent", "00-trace-span-01") }

func (h *recordingHooks) NoteResponseModel(m string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.models = append(h.models, m)
}

// The default transport sends the attempt hooks' headers with every request
// and reports the model the upstream names, streamed or not.
func TestTransportCallsAttemptHooks(t *testing.T) {
	up := testutil.NewUpstream(t)
	c := openai.New()
	src := sourceFor(up)

	h := &recordingHooks{}
	ctx := observe.WithAttemptHooks(testCtx(t), h)
	st, err := c.ChatStream(ctx, src, hello())
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	assert.Equal(t, "00-trace-span-01", up.LastRequest(testutil.Chat).Header.Get("traceparent"))
	require.NotEmpty(t, h.models)
	for _, m := range h.models { // from the events before the first chunk
		assert.Equal(t, "fake-model", m)
	}

	h2 := &recordingHooks{}
	_, err = c.Embed(observe.WithAttemptHooks(testCtx(t), h2), src, transport.EmbedRequest{Inputs: []string{"a"}, Model: "embed-x"})
	require.NoError(t, err)
	assert.Equal(t, "00-trace-span-01", up.LastRequest(testutil.Embeddings).Header.Get("traceparent"))
	assert.Equal(t, []string{"embed-x"}, h2.models)

	// Without hooks nothing is added.
	st, err = c.ChatStream(testCtx(t), src, hello())
	require.NoError(t, err)
	_, err = collect(t, st)
	require.NoError(t, err)
	assert.Empty(t, up.LastRequest(testutil.Chat).Header.Get("traceparent"))
}
