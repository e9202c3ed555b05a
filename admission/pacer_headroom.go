package admission

// HeadroomShare is the share of an advertised window below which the pacer
// takes an answer as a throttle: under a tenth left, the source's window
// halves (at most once per DecreaseHold, as for a 429), so the calls of this
// process slow down before the upstream answers 429.
const HeadroomShare = 10

// Headroom tells the pacer what an upstream answer of source advertised:
// remaining of limit left in one of its windows. Under a tenth left it
// halves the source's window, at most once per DecreaseHold; more left
// changes nothing (successes grow the window, as always).
func (p *Pacer) Headroom(source string, remaining, limit int64) {
	w := p.sources[source]
	if w == nil || limit <= 0 || remaining < 0 || remaining*HeadroomShare >= limit {
		return
	}
	now := p.cfg.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lastDecrease.IsZero() && now.Sub(w.lastDecrease) < p.cfg.DecreaseHold {
		return
	}
	w.lastDecrease = now
	w.window = max(w.window/2, 1)
	w.successes = 0
}
