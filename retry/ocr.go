package retry

import (
	"context"
	"fmt"
	"github.com/pgw-go/pgw/admission"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/internal/errs"
	"github.com/pgw-go/pgw/transport"
)

// OCR is the OCR loop: one image per attempt; a multi-page input runs its
// pages concurrently (bounded), each page its own governed call. Safe for
// concurrent use.
type OCR struct {
	l           *Loop
	tr          transport.OCRTransport
	concurrency int
}

// NewOCR returns the OCR loop of l's scope over tr. concurrency bounds the
// pages in flight per call (0: DefaultConcurrency), and so does the scope's
// MAX_IN_FLIGHT summed over its sources when every source has one.
func NewOCR(l *Loop, tr transport.OCRTransport, concurrency int) *OCR {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	return &OCR{l: l, tr: tr, concurrency: concurrency}
}

// OCR reads one image. No token estimate is reserved (the size of an image
// in tokens is the provider's business); the reported usage is settled. A
// request without an image is a *transport.RequestError before admission,
// reported to the observer as a CallResult "caller_error" without attempts.
func (o *OCR) OCR(ctx context.Context, req transport.OCRRequest) (transport.OCRResponse, error) {
	if err := req.Validate(); err != nil {
		return transport.OCRResponse{}, o.l.refuse(ctx, opOCR, req.Model, err)
	}
	return o.read(ctx, req, nil)
}

// read is OCR on a request already checked; sib, when not nil, are the
// pages of the call it is one of.
func (o *OCR) read(ctx context.Context, req transport.OCRRequest, sib *admission.Siblings) (transport.OCRResponse, error) {
	return runPart(ctx, o.l, sib, opOCR, req.Model, 0, o.l.demote, func(actx context.Context, src config.Source, _ *hold) (transport.OCRResponse, transport.Usage, error) {
		r, err := o.tr.OCR(actx, src, req)
		return r, r.Usage, err
	})
}

// Pages reads every page, in order. When some pages fail and others succeed,
// the result holds the successful pages (zero where a page failed) and the
// error is a BatchError naming the failed pages (errors.As into
// *pgw.BatchError matches it); errors.As reaches each page's own error.
// Once a page ends stalled, those not yet begun end with its error rather
// than wait the window again.
//
// Every page is checked before any is read: no pages, or a page without an
// image, is a *transport.RequestError (Field "pages" or "pages[i].Image")
// and no page is sent; the observer gets one CallResult "caller_error"
// without attempts.
func (o *OCR) Pages(ctx context.Context, pages []transport.OCRRequest) ([]transport.OCRResponse, error) {
	if err := checkPages(pages); err != nil {
		return nil, o.l.refuse(ctx, opOCR, "", err)
	}
	out := make([]transport.OCRResponse, len(pages))
	errsOf := make([]error, len(pages))
	var stall partStall
	sib := siblingsOf(len(pages))
	forEachPart(len(pages), o.l.partLimit(o.concurrency), func(i int) {
		if err := ctx.Err(); err != nil {
			errsOf[i] = err
			return
		}
		if err := stall.stalled(); err != nil {
			errsOf[i] = err
			return
		}
		out[i], errsOf[i] = o.read(ctx, pages[i], sib)
		stall.note(errsOf[i])
	})
	var failed []errs.BatchFailure
	for i, err := range errsOf {
		if err != nil {
			failed = append(failed, errs.BatchFailure{Start: i, End: i + 1, Err: err})
		}
	}
	if len(failed) == 0 {
		return out, nil
	}
	return out, &errs.BatchError{Scope: o.l.scope, Total: len(pages), Failed: failed}
}

// checkPages validates every page of a multi-page call.
func checkPages(pages []transport.OCRRequest) error {
	if len(pages) == 0 {
		return &transport.RequestError{Request: "OCR", Field: "pages", Problem: "empty (legal: at least one page)"}
	}
	for i, p := range pages {
		if err := p.Validate(); err != nil {
			re := *err.(*transport.RequestError)
			re.Field = fmt.Sprintf("pages[%d].%s", i, re.Field)
			return &re
		}
	}
	return nil
}
