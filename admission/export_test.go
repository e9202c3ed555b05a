package admission

// Lingering is how many outcomes the round that waits for more (Linger)
// holds: 0 while no round waits. For tests that need a round to linger
// before they go on.
func (w *Writer) Lingering() int { return int(w.held.Load()) }

// Hurried reports whether the next round is to be written without
// lingering (an admission asked for its slot).
func (w *Writer) Hurried() bool { return w.hurry.Load() }
