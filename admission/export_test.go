package admission

// Lingering is how many outcomes the round that waits for more (Linger)
// holds: 0 while no round waits. For tests that need a round to linger
// before they go on.
func (w *Writer) Lingering() int { return int(w.held.Load()) }

// Hurried reports whether the next round is to be written without
// lingering (an admission asked for its slot).
func (w *Writer) Hurried() bool { return w.hurry.Load() }

// ProbeWaiting is how many admissions wait for source's outcomes that may
// move its breaker to be written (Pick's ordering). For tests that need a
// Pick to be in that wait before they go on.
func (a *SourceAdmission) ProbeWaiting(source string) int {
	for i, s := range a.sel.sources {
		if s.Name == source && a.probes != nil {
			p := &a.probes[i]
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.waiting
		}
	}
	return 0
}

// OnCount makes f run before and after each count of an outcome as
// written, failed or dropped (f must not block). Set before the writer is
// used.
func (w *Writer) OnCount(f func()) { w.step = f }

// Closing is closed once Close has begun: the writer takes no outcome from
// then on.
func (w *Writer) Closing() <-chan struct{} { return w.closing }
