package retry_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/retry"
	"github.com/pgw-go/pgw/transport"
)

// failingPrimary is a scope whose preferred source s1 answers 500 every
// time and whose breaker never opens (Noop): only the in-call demotion can
// send the next attempt to s2.
func failingPrimary(t *testing.T) *env {
	return newEnv(t, withScope(func(s *config.ScopeSettings) {
		s.Sources = []config.Source{{Name: "s1"}, {Name: "s2", Priority: 1}}
	}), func(c *retry.Config) { c.Breaker = gate.Noop{} })
}

// seenBy records the sources a fake was asked on, and fails on s1.
type seenBy struct {
	mu   sync.Mutex
	seen []string
}

func (s *seenBy) ask(src string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, src)
	if src == "s1" {
		return httpErr(500, 0, "primary down")
	}
	return nil
}

func (s *seenBy) sources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func TestRunDemotesASourceThatFailedInThisCall(t *testing.T) {
	e := failingPrimary(t)
	var s seenBy
	v, err := retry.Run(context.Background(), e.loop, 1, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
		return "ok@" + src.Name, transport.Usage{}, s.ask(src.Name)
	})
	require.NoError(t, err)
	assert.Equal(t, "ok@s2", v)
	assert.Equal(t, []string{"s1", "s2"}, s.sources(), "the second attempt goes to the backup at once")
}

type demoteEmbed struct{ seenBy }

func (f *demoteEmbed) Embed(_ context.Context, src transport.Source, req transport.EmbedRequest) (transport.EmbedResponse, error) {
	if err := f.ask(src.Name); err != nil {
		return transport.EmbedResponse{}, err
	}
	return transport.EmbedResponse{Vectors: make([][]float32, len(req.Inputs))}, nil
}

func TestEmbedDemotesASourceThatFailedInThisCall(t *testing.T) {
	e := failingPrimary(t)
	f := &demoteEmbed{}
	_, err := retry.NewEmbed(e.loop, f, 0).Embed(context.Background(), transport.EmbedRequest{Inputs: []string{"a"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"s1", "s2"}, f.sources())
}

type demoteOCR struct{ seenBy }

func (f *demoteOCR) OCR(_ context.Context, src transport.Source, _ transport.OCRRequest) (transport.OCRResponse, error) {
	if err := f.ask(src.Name); err != nil {
		return transport.OCRResponse{}, err
	}
	return transport.OCRResponse{Text: "ok"}, nil
}

func TestOCRDemotesASourceThatFailedInThisCall(t *testing.T) {
	e := failingPrimary(t)
	f := &demoteOCR{}
	_, err := retry.NewOCR(e.loop, f, 0).OCR(context.Background(), transport.OCRRequest{Image: []byte("x")})
	require.NoError(t, err)
	assert.Equal(t, []string{"s1", "s2"}, f.sources())
}

// Each attempt gets the settings of the source admission picked, with a
// few sources and with many: every source but the last fails once, so the
// call walks them all, each attempt with its own source's base URL.
func TestRunHandsEachAttemptItsSourcesSettings(t *testing.T) {
	for _, ns := range [][]string{{"a", "ab", "b"}, {"a", "ab", "abc", "b", "ba", "c"}} {
		e := newEnv(t, withScope(func(s *config.ScopeSettings) {
			s.Sources = nil
			for i, n := range ns {
				s.Sources = append(s.Sources, config.Source{Name: n, Priority: i, BaseURL: "http://" + n + ".test", Timeout: time.Duration(i+1) * time.Second})
			}
			s.MaxAttempts = len(ns)
		}), func(c *retry.Config) { c.Breaker = gate.Noop{} })
		var seen []string
		v, err := retry.Run(context.Background(), e.loop, 1, func(_ context.Context, src config.Source) (string, transport.Usage, error) {
			seen = append(seen, src.Name)
			if src.BaseURL != "http://"+src.Name+".test" {
				t.Errorf("%d sources: attempt on %q got the settings of another source: BaseURL %q", len(ns), src.Name, src.BaseURL)
			}
			if src.Name != ns[len(ns)-1] {
				return "", transport.Usage{}, httpErr(500, 0, "down")
			}
			return "ok@" + src.Name, transport.Usage{}, nil
		})
		require.NoError(t, err)
		assert.Equal(t, "ok@"+ns[len(ns)-1], v)
		assert.Equal(t, ns, seen, "%d sources: one attempt per source, in priority order", len(ns))
	}
}
