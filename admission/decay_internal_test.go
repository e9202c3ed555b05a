package admission

import (
	"math"
	"testing"
)

// decay's series agrees with math.Exp to the last bit or two wherever it
// is used, and is math.Exp beyond.
func TestDecayMatchesExp(t *testing.T) {
	xs := []float64{0, 1e-12, 1.7e-7, 1e-6, 3e-5, 1e-4, 5e-4, smallDecay * 0.999, smallDecay, 0.01, 0.5, 1, 10, 800}
	for i := range 2000 {
		xs = append(xs, smallDecay*float64(i)/2000)
	}
	for _, x := range xs {
		got, want := decay(x), math.Exp(-x)
		if d := math.Abs(got - want); d > 2*ulp(want) {
			t.Errorf("decay(%g) = %.17g, math.Exp(-%g) = %.17g: off by %g ulp", x, got, x, want, d/ulp(want))
		}
	}
}

func ulp(x float64) float64 { return math.Nextafter(x, math.Inf(1)) - x }
