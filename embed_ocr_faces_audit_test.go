package pgw_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/internal/testutil"
)

// auditEOEmbedUpstream is an embeddings server: each input's vector is
// {len(input), position of the input in the whole request's numbering when
// it is "n<k>"}; it lists the vectors in reverse order (placed by index),
// reports usage of one token per input, answers 500 to a batch holding an
// input in fail500 and 400 to one holding "reject". It counts requests and
// the peak of requests in flight.
type auditEOEmbedUpstream struct {
	fail500  map[string]bool
	hold     time.Duration
	mu       sync.Mutex
	batches  [][]string
	inFlight atomic.Int32
	peak     atomic.Int32
}

func (u *auditEOEmbedUpstream) serve(t *testing.T, name string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for {
			p := u.peak.Load()
			if n <= p || u.peak.CompareAndSwap(p, n) {
				break
			}
		}
		var req struct {
			Model          string   `json:"model"`
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.EncodingFormat != "float" || r.URL.Path != "/v1/embeddings" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		u.mu.Lock()
		u.batches = append(u.batches, append([]string{name}, req.Input...))
		u.mu.Unlock()
		if u.hold > 0 {
			time.Sleep(u.hold)
		}
		w.Header().Set("Content-Type", "application/json")
		for _, in := range req.Input {
			if in == "reject" {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"message":"input rejected","type":"invalid_request_error"}}`)
				return
			}
			if u.fail500[in] && name == "a" {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
				return
			}
		}
		var b strings.Builder
		b.WriteString(`{"object":"list","data":[`)
		for i := len(req.Input) - 1; i >= 0; i-- {
			in := req.Input[i]
			var k int
			_, _ = fmt.Sscanf(in, "n%d", &k)
			fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":[%d,%d]}`, i, len(in), k)
			if i > 0 {
				b.WriteString(",")
			}
		}
		fmt.Fprintf(&b, `],"model":%q,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`, req.Model, len(req.Input), len(req.Input))
		_, _ = io.WriteString(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func (u *auditEOEmbedUpstream) sent() [][]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]string(nil), u.batches...)
}

func auditEOCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A large input list is split into BATCH_SIZE parts, the last one shorter;
// the parts never run more at once than the sources' MAX_IN_FLIGHT summed;
// every vector lands at its input's position; usage is the sum of the parts';
// the observer sees one successful call of one attempt per part.
func TestEmbedAuditLargeSplitKeepsOrderBoundsInFlightAndReportsACallPerPart(t *testing.T) {
	up := &auditEOEmbedUpstream{hold: 2 * time.Millisecond}
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":                  "EMBEDDING",
		"EMBEDDING__SOURCES":          "a",
		"EMBEDDING__A__BASE_URL":      up.serve(t, "a"),
		"EMBEDDING__A__MODEL":         "emb-model",
		"EMBEDDING__A__BATCH_SIZE":    "7",
		"EMBEDDING__A__MAX_IN_FLIGHT": "2",
	}, pgw.WithConcurrency(8))
	const n = 200
	inputs := make([]string, n)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("n%d", i)
	}
	resp, err := gw.Embed(auditEOCtx(t), pgw.EmbedRequest{Inputs: inputs})
	require.NoError(t, err)
	require.Len(t, resp.Vectors, n)
	for i, v := range resp.Vectors {
		require.Equal(t, []float32{float32(len(inputs[i])), float32(i)}, v, "vector %d", i)
	}
	parts := (n + 6) / 7
	assert.Equal(t, pgw.Usage{PromptTokens: n, TotalTokens: n}, resp.Usage)
	assert.LessOrEqual(t, up.peak.Load(), int32(2), "never more parts in flight than MAX_IN_FLIGHT")

	sent := up.sent()
	require.Len(t, sent, parts)
	sort.Slice(sent, func(i, j int) bool {
		var a, b int
		_, _ = fmt.Sscanf(sent[i][1], "n%d", &a)
		_, _ = fmt.Sscanf(sent[j][1], "n%d", &b)
		return a < b
	})
	for p, batch := range sent {
		want := inputs[p*7 : min((p+1)*7, n)]
		assert.Equal(t, want, batch[1:], "part %d", p)
	}
	calls := rec.Calls()
	require.Len(t, calls, parts, "one CallResult per sub-batch")
	for _, c := range calls {
		assert.Equal(t, "EMBEDDING", c.Scope)
		assert.Equal(t, pgw.ResultSuccess, c.Result)
		assert.Equal(t, 1, c.Attempts)
		assert.Equal(t, "a", c.Source)
	}
	assert.Len(t, rec.Attempts(), parts)
}

// An input list within BATCH_SIZE is one request and one call.
func TestEmbedAuditUnsplitIsOneRequestAndOneCall(t *testing.T) {
	up := &auditEOEmbedUpstream{}
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":               "EMBEDDING",
		"EMBEDDING__SOURCES":       "a",
		"EMBEDDING__A__BASE_URL":   up.serve(t, "a"),
		"EMBEDDING__A__BATCH_SIZE": "3",
	})
	resp, err := gw.Embed(auditEOCtx(t), pgw.EmbedRequest{Inputs: []string{"n0", "n1", "n2"}})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{2, 0}, {2, 1}, {2, 2}}, resp.Vectors)
	assert.Len(t, up.sent(), 1)
	require.Len(t, rec.Calls(), 1)
	assert.Equal(t, pgw.ResultSuccess, rec.Calls()[0].Result)
}

// A sub-batch whose source answers 500 fails over to the other source on its
// own; its call has two attempts, the other parts one; the result is whole.
func TestEmbedAuditAPartFailsOverAloneAndItsCallCountsBothAttempts(t *testing.T) {
	up := &auditEOEmbedUpstream{fail500: map[string]bool{"n3": true}}
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":                   "EMBEDDING",
		"EMBEDDING__SOURCES":           "a,b",
		"EMBEDDING__A__BASE_URL":       up.serve(t, "a"),
		"EMBEDDING__B__BASE_URL":       up.serve(t, "b"),
		"EMBEDDING__B__PRIORITY":       "1",
		"EMBEDDING__A__BATCH_SIZE":     "2",
		"EMBEDDING__B__BATCH_SIZE":     "2",
		"EMBEDDING__FAILURE_THRESHOLD": "100",
	}, pgw.WithConcurrency(1))
	inputs := []string{"n0", "n1", "n2", "n3", "n4"}
	resp, err := gw.Embed(auditEOCtx(t), pgw.EmbedRequest{Inputs: inputs})
	require.NoError(t, err)
	for i := range inputs {
		assert.Equal(t, []float32{2, float32(i)}, resp.Vectors[i], "vector %d", i)
	}
	assert.Equal(t, 5, resp.Usage.TotalTokens, "the failed attempt adds no usage")
	var got []string
	for _, c := range rec.Calls() {
		require.Equal(t, pgw.ResultSuccess, c.Result)
		got = append(got, fmt.Sprintf("%s/%d", c.Source, c.Attempts))
	}
	assert.Equal(t, []string{"a/1", "b/2", "a/1"}, got)
	assert.Equal(t, []string{"a:success", "a:failure", "b:success", "a:success"}, rec.Outcomes())
}

// Each sub-batch reserves its own estimate against TPM: the part too large
// for the source's whole TPM fails with a *gate.TokensError and its range,
// the others are served and their usage summed; a part refused by the
// upstream (400) is named with its own range.
func TestEmbedAuditTPMIsReservedPerPartAndEachFailedPartIsNamed(t *testing.T) {
	up := &auditEOEmbedUpstream{}
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":               "EMBEDDING",
		"EMBEDDING__SOURCES":       "a",
		"EMBEDDING__A__BASE_URL":   up.serve(t, "a"),
		"EMBEDDING__A__BATCH_SIZE": "2",
		"EMBEDDING__A__TPM":        "20",
	}, pgw.WithConcurrency(1))
	huge := strings.Repeat("x", 200) // an estimate of 50 tokens alone
	inputs := []string{"n0", "n1", huge, "n3", "n4", "reject", "n6"}
	resp, err := gw.Embed(auditEOCtx(t), pgw.EmbedRequest{Inputs: inputs})
	var be *pgw.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "EMBEDDING", be.Scope)
	assert.Equal(t, 7, be.Total)
	require.Len(t, be.Failed, 2)
	assert.Equal(t, []int{2, 4}, []int{be.Failed[0].Start, be.Failed[0].End})
	var te *gate.TokensError
	assert.True(t, errors.As(be.Failed[0].Err, &te), "%v", be.Failed[0].Err)
	assert.Equal(t, []int{4, 6}, []int{be.Failed[1].Start, be.Failed[1].End})
	var he *pgw.HTTPError
	require.True(t, errors.As(be.Failed[1].Err, &he), "%v", be.Failed[1].Err)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	require.Len(t, resp.Vectors, 7)
	for i, v := range resp.Vectors {
		if i >= 2 && i < 6 {
			assert.Nil(t, v, "vector %d", i)
			continue
		}
		assert.Equal(t, []float32{2, float32(i)}, v, "vector %d", i)
	}
	assert.Equal(t, pgw.Usage{PromptTokens: 3, TotalTokens: 3}, resp.Usage, "the usage of the served parts only")
	for _, b := range up.sent() {
		assert.NotContains(t, b, huge, "the part over TPM is never sent")
	}
	assert.Len(t, rec.Calls(), 4, "one call per sub-batch, failed ones included")
}

// auditEOOCRUpstream answers chat completions for OCR: the image's data URL
// decides the answer — "bad" in the image is a 400, anything else is read.
func auditEOOCRUpstream(t *testing.T, bodies *[]map[string]any, mu *sync.Mutex) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		*bodies = append(*bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(raw), "data:image/bad;base64,") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"unsupported image","type":"invalid_request_error"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"PAGE"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// OCRPages: a page the upstream refuses is named by its own index in the
// *BatchError; the other pages' text and usage are returned; each page is a
// call of its own; the source's MAX_TOKENS and MODEL are on the wire.
func TestOCRPagesAuditAFailedPageIsNamedAndTheOthersReturned(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":            "OCR",
		"OCR__SOURCES":          "v",
		"OCR__V__BASE_URL":      auditEOOCRUpstream(t, &bodies, &mu),
		"OCR__V__MODEL":         "vision-1",
		"OCR__V__MAX_TOKENS":    "1500",
		"OCR__V__MAX_IN_FLIGHT": "2",
	})
	png := tinyPNG(t)
	pages := []pgw.OCRRequest{{Image: png}, {Image: []byte("x"), MIME: "image/bad"}, {Image: png}, {Image: png, Prompt: "Read the table."}}
	out, err := gw.OCRPages(auditEOCtx(t), pages)
	var be *pgw.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "OCR", be.Scope)
	assert.Equal(t, 4, be.Total)
	require.Len(t, be.Failed, 1)
	assert.Equal(t, []int{1, 2}, []int{be.Failed[0].Start, be.Failed[0].End})
	var he *pgw.HTTPError
	require.ErrorAs(t, be.Failed[0].Err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	require.Len(t, out, 4)
	for i, p := range out {
		if i == 1 {
			assert.Equal(t, pgw.OCRResponse{}, p)
			continue
		}
		assert.Equal(t, pgw.OCRResponse{Text: "PAGE", FinishReason: "stop", Usage: pgw.Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}}, p, "page %d", i)
	}
	require.Len(t, rec.Calls(), 4, "one call per page")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 4, "a 400 is not retried")
	for _, b := range bodies {
		assert.Equal(t, "vision-1", b["model"])
		assert.Equal(t, 1500.0, b["max_tokens"])
		assert.Equal(t, false, b["stream"])
	}
}

// A single OCR is one call; the observer sees it with its attempts, a 503
// failing over to the second source counted in them.
func TestOCRAuditOneCallWithItsAttempts(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	gw, rec := newGateway(t, map[string]string{
		"PGW_SCOPES":       "OCR",
		"OCR__SOURCES":     "a,b",
		"OCR__A__BASE_URL": down.URL + "/v1",
		"OCR__B__BASE_URL": auditEOOCRUpstream(t, &bodies, &mu),
		"OCR__B__PRIORITY": "1",
	})
	resp, err := gw.OCR(auditEOCtx(t), pgw.OCRRequest{Image: tinyPNG(t)})
	require.NoError(t, err)
	assert.Equal(t, "PAGE", resp.Text)
	assert.Equal(t, 11, resp.Usage.TotalTokens)
	calls := rec.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, pgw.ResultSuccess, calls[0].Result)
	assert.Equal(t, 2, calls[0].Attempts)
	assert.Equal(t, "b", calls[0].Source)
	assert.Equal(t, []string{"a:failure", "b:success"}, rec.Outcomes())
}

// OCR on an Anthropic source is one Messages request: the source's model,
// its MAX_TOKENS (else 4096), the prompt and the image as a base64 block;
// the usage of the stream is returned.
func TestOCRAuditAnthropicWire(t *testing.T) {
	for _, tt := range []struct {
		max  string
		want float64
	}{{"", 4096}, {"777", 777}} {
		t.Run("MAX_TOKENS="+tt.max, func(t *testing.T) {
			up := testutil.NewUpstream(t)
			env := map[string]string{
				"PGW_SCOPES":            "OCR",
				"OCR__SOURCES":          "claude",
				"OCR__CLAUDE__BASE_URL": up.URL,
				"OCR__CLAUDE__PROVIDER": "anthropic",
				"OCR__CLAUDE__MODEL":    "claude-sonnet-4-5",
			}
			if tt.max != "" {
				env["OCR__CLAUDE__MAX_TOKENS"] = tt.max
			}
			gw, rec := newGateway(t, env)
			up.Enqueue(testutil.Messages, testutil.Reply{Text: "INVOICE 42"})
			png := tinyPNG(t)
			resp, err := gw.OCR(auditEOCtx(t), pgw.OCRRequest{Image: png, Prompt: "Read it."})
			require.NoError(t, err)
			assert.Equal(t, "INVOICE 42", resp.Text)
			assert.Positive(t, resp.Usage.TotalTokens)
			var body struct {
				Model     string  `json:"model"`
				MaxTokens float64 `json:"max_tokens"`
				Messages  []struct {
					Role    string `json:"role"`
					Content []struct {
						Type   string `json:"type"`
						Text   string `json:"text"`
						Source struct {
							Type      string `json:"type"`
							MediaType string `json:"media_type"`
							Data      string `json:"data"`
						} `json:"source"`
					} `json:"content"`
				} `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(up.LastRequest(testutil.Messages).Body, &body))
			assert.Equal(t, "claude-sonnet-4-5", body.Model)
			assert.Equal(t, tt.want, body.MaxTokens)
			require.Len(t, body.Messages, 1)
			assert.Equal(t, "user", body.Messages[0].Role)
			require.Len(t, body.Messages[0].Content, 2)
			assert.Equal(t, "Read it.", body.Messages[0].Content[0].Text)
			img := body.Messages[0].Content[1]
			assert.Equal(t, "image", img.Type)
			assert.Equal(t, "base64", img.Source.Type)
			assert.Equal(t, "image/png", img.Source.MediaType)
			assert.Equal(t, base64.StdEncoding.EncodeToString(png), img.Source.Data)
			require.Len(t, rec.Calls(), 1)
		})
	}
}

// On Anthropic, a transcription cut at max_tokens comes back with
// FinishReason "length".
func TestOCRAuditAnthropicMaxTokensStopIsLength(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1500,\"output_tokens\":1}}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"HALF\"}}\n\n"+
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":16}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	gw, _ := newGateway(t, map[string]string{
		"PGW_SCOPES":            "OCR",
		"OCR__SOURCES":          "claude",
		"OCR__CLAUDE__BASE_URL": srv.URL + "/v1",
		"OCR__CLAUDE__PROVIDER": "anthropic",
		"OCR__CLAUDE__MODEL":    "claude-sonnet-4-5",
	})
	resp, err := gw.OCR(auditEOCtx(t), pgw.OCRRequest{Image: tinyPNG(t)})
	require.NoError(t, err)
	assert.Equal(t, "HALF", resp.Text)
	assert.Equal(t, "length", resp.FinishReason)
	assert.Empty(t, resp.Refusal)
	assert.Equal(t, pgw.Usage{PromptTokens: 1500, CompletionTokens: 16, TotalTokens: 1516}, resp.Usage)
}
