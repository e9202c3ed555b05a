package modelcheck

// Shrink returns a shorter sequence for which fails still holds, by delta
// debugging (Zeller's ddmin): it drops chunks of steps, halving the chunk size
// whenever no chunk can go, down to single steps, and keeps every removal
// after which fails is still true. normalize (nil: none) tidies each
// candidate, e.g. drops steps that lost what they depend on. At most budget
// calls of fails are made; the result is 1-minimal (no single step can be
// dropped) when the budget suffices. steps itself must fail.
func Shrink[S any](steps []S, fails func([]S) bool, normalize func([]S) []S, budget int) []S {
	if normalize == nil {
		normalize = func(s []S) []S { return s }
	}
	n := 2
	for len(steps) > 1 && budget > 0 {
		chunk := (len(steps) + n - 1) / n
		reduced := false
		for start := 0; start < len(steps) && budget > 0; start += chunk {
			end := min(start+chunk, len(steps))
			cand := make([]S, 0, len(steps)-(end-start))
			cand = append(cand, steps[:start]...)
			cand = append(cand, steps[end:]...)
			cand = normalize(cand)
			if len(cand) >= len(steps) {
				continue
			}
			budget--
			if fails(cand) {
				steps = cand
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(steps))
		}
	}
	return steps
}
