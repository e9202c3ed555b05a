package pgw_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
)

// The tests of this file drive the gateway only through its exported API
// and its documented env keys, against a fake upstream that records what it
// received and answers in the wire format of the provider the path belongs
// to.

// seen is one request as the fake upstream received it.
type seen struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   map[string]any
}

// wireUpstream answers OpenAI chat completions (streamed), Anthropic
// Messages (streamed) and OpenAI embeddings, and records every request.
type wireUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	got     []seen
	answers map[string]string // path suffix → event stream, replacing the default
}

// answer makes the upstream answer requests whose path ends in suffix with
// the event stream body.
func (u *wireUpstream) answer(suffix, body string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	next := map[string]string{suffix: body} // a new map: the handler reads the old one unlocked
	for k, v := range u.answers {
		if k != suffix {
			next[k] = v
		}
	}
	u.answers = next
}

const (
	oaStream = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n" +
		"data: [DONE]\n\n"
	antStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func newWireUpstream(t *testing.T) *wireUpstream {
	u := &wireUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()}
		_ = json.Unmarshal(raw, &s.Body)
		u.mu.Lock()
		u.got = append(u.got, s)
		answers := u.answers
		u.mu.Unlock()
		for suffix, body := range answers {
			if strings.HasSuffix(r.URL.Path, suffix) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, body)
				return
			}
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/messages"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, antStream)
		case strings.HasSuffix(r.URL.Path, "/embeddings"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		case strings.HasSuffix(r.URL.Path, "/chat/completions") && s.Body["stream"] != true:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, oaStream)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"message":"no such path","type":"invalid_request_error"}}`)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// requests returns what the upstream received so far.
func (u *wireUpstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.got...)
}

// TestAnthropicSourceWithAModelServesARequestWithout: the source's MODEL
// stands in for a request that names none.
func TestAnthropicSourceWithAModelServesARequestWithout(t *testing.T) {
	up := newWireUpstream(t)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":             "CHAT",
		"CHAT__SOURCES":          "claude",
		"CHAT__CLAUDE__BASE_URL": up.URL + "/v1",
		"CHAT__CLAUDE__PROVIDER": "anthropic",
		"CHAT__CLAUDE__MODEL":    "claude-sonnet-4-5",
	})
	r, err := gw.Chat(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, "hi", r.Content)
	got := up.requests()
	require.Len(t, got, 1)
	assert.Equal(t, "/v1/messages", got[0].Path)
	assert.Equal(t, "claude-sonnet-4-5", got[0].Body["model"])
}

// TestOpenAIAndAzureSourcesWithoutAModelAreSentWithoutOne: an
// OpenAI-compatible server may serve a default model, and an Azure
// deployment names its model in the URL, so a request with no model to a
// source with no MODEL is sent, with no "model" key (never "model":"").
func TestOpenAIAndAzureSourcesWithoutAModelAreSentWithoutOne(t *testing.T) {
	for _, provider := range []string{"openai", "azure"} {
		t.Run(provider, func(t *testing.T) {
			up := newWireUpstream(t)
			gw, _ := newGateway(t, map[string]string{
				"PGW_SCOPES":        "CHAT",
				"CHAT__SOURCES":     "a",
				"CHAT__A__BASE_URL": up.URL + "/openai/deployments/gpt-4o?api-version=2024-10-21",
				"CHAT__A__PROVIDER": provider,
			})
			r, err := gw.Chat(context.Background(), hello())
			require.NoError(t, err)
			assert.Equal(t, "hi", r.Content)
			got := up.requests()
			require.Len(t, got, 1)
			assert.Equal(t, "/openai/deployments/gpt-4o/chat/completions", got[0].Path)
			assert.Equal(t, "api-version=2024-10-21", got[0].RawQuery)
			_, has := got[0].Body["model"]
			assert.False(t, has, "no model key: %v", got[0].Body)
		})
	}
}

// TestAnImageAnthropicCannotTakeIsRefusedBeforeItIsSent: the Messages API
// takes base64 images of four media types only (JPEG, PNG, GIF, WebP). A
// chat image of another type, bound for an Anthropic source, is a
// *RequestError naming the part and the source before admission; an OCR
// image whose bytes are of another type is refused before anything is
// sent and not retried. An OpenAI-compatible source, whose server decides
// which types it reads, is sent the same chat.
func TestAnImageAnthropicCannotTakeIsRefusedBeforeItIsSent(t *testing.T) {
	bmp := pgw.ChatRequest{Model: "m", Messages: []pgw.Message{{Role: pgw.RoleUser, Parts: []pgw.ContentPart{
		pgw.TextPart("What is this?"),
		pgw.ImagePart("data:image/bmp;base64,Qk0=", ""),
	}}}}
	t.Run("chat", func(t *testing.T) {
		up := newWireUpstream(t)
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "claude",
			"CHAT__CLAUDE__BASE_URL": up.URL + "/v1", "CHAT__CLAUDE__PROVIDER": "anthropic",
		})
		_, err := gw.Chat(context.Background(), bmp)
		var re *pgw.RequestError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "Messages[0].Parts[1].ImageURL.URL", re.Field)
		assert.Equal(t, "claude", re.Source)
		assert.Contains(t, re.Problem, "image/bmp")
		assert.Contains(t, re.Problem, "image/png", "names what is legal")
		assert.Empty(t, up.requests())
		assert.Empty(t, rec.Attempts())
	})
	t.Run("chat to an OpenAI-compatible source", func(t *testing.T) {
		up := newWireUpstream(t)
		gw, _ := newGateway(t, map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "oa", "CHAT__OA__BASE_URL": up.URL + "/v1"})
		_, err := gw.Chat(context.Background(), bmp)
		require.NoError(t, err)
		assert.Len(t, up.requests(), 1)
	})
	t.Run("OCR", func(t *testing.T) {
		up := newWireUpstream(t)
		gw, rec := newGateway(t, map[string]string{
			"PGW_SCOPES": "OCR", "OCR__SOURCES": "claude",
			"OCR__CLAUDE__BASE_URL": up.URL + "/v1", "OCR__CLAUDE__PROVIDER": "anthropic", "OCR__CLAUDE__MODEL": "m",
		})
		_, err := gw.OCR(context.Background(), pgw.OCRRequest{Image: []byte("BM plain bytes, no image format Anthropic takes")})
		var re *pgw.RequestError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "claude", re.Source)
		assert.Empty(t, up.requests(), "nothing was sent")
		assert.LessOrEqual(t, len(rec.Attempts()), 1, "not retried")
	})
}
