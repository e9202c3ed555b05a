package retry

import (
	"context"
	"fmt"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/transport"
)

// Embed is the embedding loop: inputs larger than the scope's batch limit are
// split into sub-batches, each its own governed call (admission, retries,
// fail-over), run with bounded concurrency; vectors come back in input
// order. A failed sub-batch does not throw away the others' vectors. Safe for
// concurrent use.
type Embed struct {
	l           *Loop
	tr          transport.EmbedTransport
	concurrency int
}

// NewEmbed returns the embedding loop of l's scope over tr. concurrency
// bounds the sub-batches in flight per call (0: DefaultConcurrency), and so
// does the scope's MAX_IN_FLIGHT summed over its sources when every source
// has one: a call never competes with itself for slots that do not exist.
func NewEmbed(l *Loop, tr transport.EmbedTransport, concurrency int) *Embed {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	return &Embed{l: l, tr: tr, concurrency: concurrency}
}

// BatchSize is the sub-batch size: the smallest BatchSize among the scope's
// sources, since any sub-batch may land on any source; 0 means no split.
func (e *Embed) BatchSize() int { return e.l.minBatch }

// Embed returns one vector per input, in input order. When some sub-batches
// fail and others succeed, the response holds the successful vectors (nil
// where a sub-batch failed) and the error is a BatchError naming the failed
// ranges (errors.As into *pgw.BatchError matches it); errors.As reaches each range's own error. A call that is
// not split returns its error as is. Once a sub-batch ends stalled, those
// not yet begun end with its error rather than wait the window again.
//
// A request without inputs, or with an input that is the empty string, is a
// *transport.RequestError before admission,
// reported to the observer as one CallResult "caller_error" without
// attempts.
func (e *Embed) Embed(ctx context.Context, req transport.EmbedRequest) (transport.EmbedResponse, error) {
	if err := req.Validate(); err != nil {
		return transport.EmbedResponse{}, e.l.refuse(ctx, opEmbeddings, req.Model, err)
	}
	n := len(req.Inputs)
	size := e.l.minBatch
	if size <= 0 || size > n {
		size = n
	}
	parts := (n + size - 1) / size
	vectors := make([][]float32, n)
	usages := make([]transport.Usage, parts)
	errsOf := make([]error, parts)
	var stall partStall
	sib := siblingsOf(parts)
	forEachPart(parts, e.l.partLimit(e.concurrency), func(p int) {
		lo, hi := p*size, min((p+1)*size, n)
		if err := ctx.Err(); err != nil {
			errsOf[p] = err
			return
		}
		if err := stall.stalled(); err != nil {
			errsOf[p] = err
			return
		}
		sub := transport.EmbedRequest{Inputs: req.Inputs[lo:hi], Model: req.Model}
		resp, err := runPart(ctx, e.l, sib, opEmbeddings, req.Model, estimateEmbed(sub.Inputs), e.l.demote,
			func(actx context.Context, src config.Source, _ *hold) (transport.EmbedResponse, transport.Usage, error) {
				r, err := e.tr.Embed(actx, src, sub)
				if err == nil && len(r.Vectors) != len(sub.Inputs) {
					err = fmt.Errorf("pgw/retry: source %q returned %d vectors for %d inputs", src.Name, len(r.Vectors), len(sub.Inputs))
				}
				return r, r.Usage, err
			})
		if err != nil {
			errsOf[p] = err
			stall.note(err)
			return
		}
		copy(vectors[lo:hi], resp.Vectors)
		usages[p] = resp.Usage
	})
	out := transport.EmbedResponse{Vectors: vectors}
	var failed []errs.BatchFailure
	for p, err := range errsOf {
		if err != nil {
			failed = append(failed, errs.BatchFailure{Start: p * size, End: min((p+1)*size, n), Err: err})
			continue
		}
		out.Usage = out.Usage.Add(usages[p])
	}
	switch {
	case len(failed) == 0:
		return out, nil
	case parts == 1:
		return transport.EmbedResponse{}, failed[0].Err
	}
	return out, &errs.BatchError{Scope: e.l.scope, Total: n, Failed: failed}
}

// estimateEmbed is about four characters per token.
func estimateEmbed(inputs []string) int64 {
	n := 0
	for _, s := range inputs {
		n += len(s)
	}
	return int64((n + 3) / 4)
}
