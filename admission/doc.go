// Package admission decides which source of a scope runs the next attempt of a
// governed call, and what a call does when none may run.
// It is the one decision point the chat, embedding and OCR loops of
// package retry share: their differences — in-call demotion and the AIMD pacer
// — are injected, not branched.
//
// A SourceAdmission is built once per scope. Each call takes a Call from it:
//
//	call := adm.NewCall(stallClock)
//	for {
//		t, rej, err := call.Pick(ctx, estTokens)
//		if err != nil { return err }
//		if t == nil {
//			if err := call.OnNoRunnable(ctx, rej); err != nil { return err }
//			continue
//		}
//		func() {
//			var res admission.Result // zero Outcome: given back as Released
//			defer func() { _ = t.Done(ctx, res) }() // panics included
//			… attempt on t.Source, then set res …
//		}()
//	}
//
// Pick walks the sources in selector order (priority tiers ascending,
// weighted random within a tier, sources that failed earlier in the call
// last) and checks each, in order: the cooldown memo ("cooldown", or
// "retry_after" while an upstream's Retry-After holds the source off), the breaker
// TryEnter ("circuit_open"), the quota Acquire ("rate_limited") and the pacer
// ("adaptive_paced"). The pacer's slot is taken before the quota is asked, so
// a full window spends none of the source's RPM (a reserved request cannot be
// given back): a source whose window is full is reported "adaptive_paced"
// even when its quota would have rejected too, but "circuit_open" when its
// breaker rejects. The first source that passes all four wins — once the
// memo, read again after the gates' round trips, still lets it (an upstream's
// Retry-After may have landed meanwhile); whatever was taken for a source
// that then lost is given back at once. A caller's cancellation during a gate
// round trip ends the round with ctx.Err(), not as a gate error.
//
// OnNoRunnable dispatches on the rejection reasons: when every rejection is a
// gate rejection (cooldown, circuit_open) the scope's CIRCUIT_OPEN mode
// applies, otherwise its QUOTA_FULL mode — so a breaker wait is never reported
// as quota_exhausted. A waiting call sleeps nap(hint): to the certain end of
// the earliest cooldown plus jitter, clamped to one poll past the moment the
// call would be stalled, so it asks the gate about once per cooldown and its
// worst wall time is the stall window plus one poll interval.
//
// The admission watches what its breaker answers: a state (or an operator's
// override) other than the one it last saw is logged ("pgw: breaker state
// changed") and, with Config.Observer, reported as an observe.StateChange
// with the outcomes that caused it; rejections and waits go to the observer
// too. Watching costs no gate operation of its own: every breaker answer
// carries the record's generation, state and override, and an answer like
// the last one seen costs one atomic load. Only an answer that generations
// cannot order (a lower generation, an expired Redis record, a fail-over
// fallback's answer) makes the admission read the record with Snapshot.
package admission
