package pgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

// batchServer is an OpenAI-style embeddings upstream whose handler is given
// the response writer, the request and its inputs; it answers, for input "k" or
// "<word>-k", the vector {k}, listing the data items in reverse order (each
// with its index) so that the client must place them by index. A handler
// returning false has written its own answer.
func batchServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, inputs []string) bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if handle != nil && !handle(w, r, req.Input) {
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data  []item         `json:"data"`
			Usage map[string]int `json:"usage"`
		}
		for i := len(req.Input) - 1; i >= 0; i-- {
			out.Data = append(out.Data, item{Index: i, Embedding: []float32{float32(inputNumber(req.Input[i]))}})
		}
		out.Usage = map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// inputNumber is k of an input "k" or "<word>-k".
func inputNumber(in string) int {
	n, _ := strconv.Atoi(in[strings.LastIndexByte(in, '-')+1:])
	return n
}

func batchEnv(url, batchSize string) map[string]string {
	return map[string]string{
		"PGW_SCOPES":                   "EMBEDDING",
		"EMBEDDING__SOURCES":           "e",
		"EMBEDDING__E__BASE_URL":       url,
		"EMBEDDING__E__BATCH_SIZE":     batchSize,
		"EMBEDDING__FAILURE_THRESHOLD": "100",
	}
}

func TestEmbedBatchSizeIllegalValuesNameTheKeyAndTheLegalRange(t *testing.T) {
	const key = "EMBEDDING__E__BATCH_SIZE"
	for _, raw := range []string{"-1", "-2147483648", "abc", "1.5", "1e3", "0x10", "2147483648", "99999999999999999999", ""} {
		t.Run("env/"+raw, func(t *testing.T) {
			for k, v := range batchEnv("http://127.0.0.1:1/v1", raw) {
				t.Setenv(k, v)
			}
			gw, err := pgw.NewFromEnv(context.Background())
			if gw != nil {
				_ = gw.Close()
			}
			var ce *pgw.ConfigError
			require.ErrorAs(t, err, &ce, "%q is refused, not defaulted", raw)
			require.Len(t, ce.Problems, 1, "%v", ce)
			p := ce.Problems[0]
			assert.Equal(t, key, p.Key)
			assert.Equal(t, raw, p.Value)
			assert.Equal(t, "integer in [0, 2147483647]; 0 = no split", p.Legal)
			assert.Contains(t, err.Error(), key)
			assert.Contains(t, err.Error(), "integer in [0, 2147483647]")
		})
	}
	for _, n := range []int{-1, 1 << 40} {
		t.Run("settings/"+strconv.Itoa(n), func(t *testing.T) {
			s, err := config.FromMap(batchEnv("http://127.0.0.1:1/v1", "2"))
			require.NoError(t, err)
			s.Scopes[0].Sources[0].BatchSize = n
			gw, err := pgw.New(context.Background(), *s)
			if gw != nil {
				_ = gw.Close()
			}
			var ce *pgw.ConfigError
			require.ErrorAs(t, err, &ce, "a programmatic BatchSize of %d is refused", n)
			require.Len(t, ce.Problems, 1, "%v", ce)
			assert.Equal(t, key, ce.Problems[0].Key)
			assert.Equal(t, strconv.Itoa(n), ce.Problems[0].Value)
			assert.Contains(t, ce.Problems[0].Legal, "integer in [0, 2147483647]")
		})
	}
}

func TestEmbedBatchSizeZeroOrLargerThanTheInputSendsOneRequest(t *testing.T) {
	for _, size := range []string{"0", " 7 ", "2147483647"} {
		t.Run(size, func(t *testing.T) {
			var requests atomic.Int64
			url := batchServer(t, func(http.ResponseWriter, *http.Request, []string) bool { requests.Add(1); return true })
			gw, _ := newGateway(t, batchEnv(url, size))
			resp, err := gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{"0", "1", "2", "3", "4", "5", "6"}})
			require.NoError(t, err)
			require.Len(t, resp.Vectors, 7)
			for i, v := range resp.Vectors {
				assert.Equal(t, []float32{float32(i)}, v, "vector %d", i)
			}
			assert.EqualValues(t, 1, requests.Load(), "no split")
		})
	}
}

// endedCalls is an observer that reports each finished governed call (one
// per sub-batch) on a channel.
func endedCalls() (pgw.Observer, <-chan pgw.CallResult) {
	ch := make(chan pgw.CallResult, 64)
	return pgw.ObserverFuncs{Call: func(c pgw.CallResult) { ch <- c }}, ch
}

func TestEmbedSubBatchesFinishingInReverseOrderComeBackInInputOrder(t *testing.T) {
	const parts = 4
	arrived := make(chan int, parts)
	var release [parts]chan struct{}
	for i := range release {
		release[i] = make(chan struct{})
	}
	url := batchServer(t, func(_ http.ResponseWriter, r *http.Request, in []string) bool {
		p := inputNumber(in[0]) / 2
		arrived <- p
		select {
		case <-release[p]:
			return true
		case <-r.Context().Done():
			return false
		}
	})
	s, err := config.FromMap(batchEnv(url, "2"))
	require.NoError(t, err)
	obs, ended := endedCalls()
	gw, err := pgw.New(context.Background(), *s, pgw.WithObserver(obs), pgw.WithConcurrency(parts), pgw.WithLogger(testLogger(t)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gw.Close()) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inputs := []string{"x-0", "x-1", "x-2", "x-3", "x-4", "x-5", "x-6"} // parts [0,2) [2,4) [4,6) [6,7)
	type result struct {
		resp pgw.EmbedResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: inputs})
		done <- result{resp, err}
	}()
	seen := map[int]bool{}
	for range parts {
		select {
		case p := <-arrived:
			seen[p] = true
		case <-ctx.Done():
			t.Fatal("the sub-batches never were all in flight together")
		}
	}
	require.Len(t, seen, parts, "every sub-batch in flight at once")
	// Finish them last first: each one's call has ended before the next is
	// released.
	for p := parts - 1; p >= 0; p-- {
		close(release[p])
		select {
		case c := <-ended:
			require.NoError(t, c.Err, "sub-batch %d", p)
		case <-ctx.Done():
			t.Fatalf("sub-batch %d never ended", p)
		}
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("Embed never returned")
	}
	require.NoError(t, r.err)
	require.Len(t, r.resp.Vectors, len(inputs))
	for i, v := range r.resp.Vectors {
		assert.Equal(t, []float32{float32(i)}, v, "vector %d is input %d's", i, i)
	}
	assert.Equal(t, len(inputs), r.resp.Usage.TotalTokens)
}

func TestEmbedCanceledWithSubBatchesInFlightLeaksNoPermitAndNoGoroutine(t *testing.T) {
	arrived := make(chan struct{}, 16)
	var plain atomic.Int64
	bothIn := make(chan struct{})
	url := batchServer(t, func(_ http.ResponseWriter, r *http.Request, in []string) bool {
		if strings.HasPrefix(in[0], "slow-") {
			arrived <- struct{}{}
			<-r.Context().Done()
			return false
		}
		// A later call's sub-batches answer only once both are in flight
		// together: both MAX_IN_FLIGHT slots must be free.
		if plain.Add(1) == 2 {
			close(bothIn)
		}
		select {
		case <-bothIn:
			return true
		case <-r.Context().Done():
			return false
		}
	})
	env := batchEnv(url, "1")
	env["EMBEDDING__E__MAX_IN_FLIGHT"] = "2"
	gw, _ := newGateway(t, env, pgw.WithConcurrency(4))

	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"slow-0", "slow-1", "slow-2", "slow-3", "slow-4", "slow-5"}})
		done <- err
	}()
	timeout := time.After(30 * time.Second)
	for range 2 {
		select {
		case <-arrived:
		case <-timeout:
			t.Fatal("the sub-batches never were in flight")
		}
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-timeout:
		t.Fatal("Embed did not return after its ctx was cancelled")
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, ctx.Err())
	assert.ErrorIs(t, err, context.Canceled)
	var be *pgw.BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			assert.ErrorIs(t, f.Err, context.Canceled, "range [%d,%d)", f.Start, f.End)
		}
	}
	// Eventually runs its condition on a goroutine of its own: one more
	// than before.
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 },
		10*time.Second, 5*time.Millisecond, "goroutines left behind by the cancelled call")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	resp, err := gw.Embed(ctx2, pgw.EmbedRequest{Inputs: []string{"0", "1"}})
	require.NoError(t, err, "both in-flight permits came back")
	assert.Equal(t, [][]float32{{0}, {1}}, resp.Vectors)
}

func TestEmbedSeveralFailingSubBatchesAreEachNamedAndTheRestKept(t *testing.T) {
	url := batchServer(t, func(w http.ResponseWriter, _ *http.Request, in []string) bool {
		for _, s := range in {
			if strings.HasPrefix(s, "bad-") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"message":"input rejected","type":"invalid_request_error"}}`)
				return false
			}
		}
		return true
	})
	gw, _ := newGateway(t, batchEnv(url, "2"), pgw.WithConcurrency(4))
	// Parts [0,2) [2,4) [4,6) [6,7): the first and the last (short) fail.
	inputs := []string{"bad-0", "x-1", "x-2", "x-3", "x-4", "x-5", "bad-6"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: inputs})
	var be *pgw.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, pgw.CodePartial, be.Code())
	assert.Equal(t, len(inputs), be.Total)
	require.Len(t, be.Failed, 2)
	assert.Equal(t, [2]int{0, 2}, [2]int{be.Failed[0].Start, be.Failed[0].End})
	assert.Equal(t, [2]int{6, 7}, [2]int{be.Failed[1].Start, be.Failed[1].End})
	for _, f := range be.Failed {
		var he *pgw.HTTPError
		require.ErrorAs(t, f.Err, &he, "range [%d,%d) keeps its own error", f.Start, f.End)
		assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	}
	msg := err.Error()
	assert.Contains(t, msg, "3 of 7 inputs failed")
	assert.Contains(t, msg, "[0,2)")
	assert.Contains(t, msg, "[6,7)")
	require.Len(t, resp.Vectors, len(inputs))
	for i, v := range resp.Vectors {
		if i < 2 || i == 6 {
			assert.Nil(t, v, "vector %d failed", i)
			continue
		}
		assert.Equal(t, []float32{float32(i)}, v, "vector %d kept", i)
	}
	assert.Equal(t, 4, resp.Usage.TotalTokens, "only the successful sub-batches' usage")
}

func TestEmbedSplitUnderAnEndedCtxReturnsItsErrorAndSendsNothing(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for name, ctx := range map[string]context.Context{"canceled": canceled, "deadline": expired} {
		t.Run(name, func(t *testing.T) {
			var requests atomic.Int64
			url := batchServer(t, func(http.ResponseWriter, *http.Request, []string) bool { requests.Add(1); return true })
			gw, _ := newGateway(t, batchEnv(url, "1"), pgw.WithConcurrency(3))
			_, err := gw.Embed(ctx, pgw.EmbedRequest{Inputs: []string{"0", "1", "2", "3"}})
			require.Error(t, err)
			assert.ErrorIs(t, err, ctx.Err())
			assert.Zero(t, requests.Load(), "no sub-batch is sent under an ended ctx")
			resp, err := gw.Embed(context.Background(), pgw.EmbedRequest{Inputs: []string{"0", "1", "2", "3"}})
			require.NoError(t, err)
			assert.Len(t, resp.Vectors, 4)
		})
	}
}
