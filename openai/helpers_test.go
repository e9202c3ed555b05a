package openai_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/testutil"
	"github.com/pgw-go/pgw/transport"
)

// testKey is the API key of every test source; no error may show it.
const testKey = "sk-test-0123456789abcdef"

// testTimeout turns a hang (a client that buffers, a server that never
// answers) into a failure; no test waits for it to pass.
const testTimeout = 10 * time.Second

func sourceFor(u *testutil.Upstream) transport.Source {
	return transport.Source{Name: "fake-1", BaseURL: u.URL, APIKey: config.NewSecret(testKey), Model: "fake-model"}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func hello() transport.ChatRequest {
	return transport.ChatRequest{Messages: []transport.Message{{Role: "user", Content: "say hello"}}}
}

// collect reads a stream to its end and closes it.
func collect(t *testing.T, st transport.ChatStream) ([]transport.ChatChunk, error) {
	t.Helper()
	defer func() { require.NoError(t, st.Close()) }()
	var chunks []transport.ChatChunk
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
}

func text(chunks []transport.ChatChunk) string {
	s := ""
	for _, c := range chunks {
		s += c.Delta
	}
	return s
}
