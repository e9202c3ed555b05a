package upstreamhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/internal/upstreamhttp"
)

// seen records the credential headers each request to a server carried.
type seen struct {
	mu  sync.Mutex
	got []http.Header
}

func (s *seen) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := http.Header{}
	for _, k := range []string{"Authorization", "Api-Key", "X-Api-Key"} {
		if v := r.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	s.got = append(s.got, h)
}

func (s *seen) all() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.got...)
}

func request(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-secret")
	req.Header.Set("Api-Key", "azure-secret")
	req.Header.Set("X-Api-Key", "anthropic-secret")
	return req
}

func TestARedirectToAnotherHostCarriesNoCredential(t *testing.T) {
	var other seen
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
	}))
	defer elsewhere.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/v1/chat", http.StatusTemporaryRedirect)
	}))
	defer origin.Close()

	resp, err := upstreamhttp.NewClient().Do(request(t, origin.URL+"/v1/chat"))
	require.NoError(t, err)
	resp.Body.Close()
	got := other.all()
	require.Len(t, got, 1, "the redirect was followed")
	assert.Empty(t, got[0], "no credential header reached the other host")
}

func TestARedirectOnTheSameHostKeepsTheCredential(t *testing.T) {
	var at seen
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/old") {
			http.Redirect(w, r, srv.URL+"/new", http.StatusTemporaryRedirect)
			return
		}
		at.record(r)
	}))
	defer srv.Close()

	resp, err := upstreamhttp.NewClient().Do(request(t, srv.URL+"/old"))
	require.NoError(t, err)
	resp.Body.Close()
	got := at.all()
	require.Len(t, got, 1)
	assert.Equal(t, "Bearer sk-secret", got[0].Get("Authorization"))
	assert.Equal(t, "azure-secret", got[0].Get("Api-Key"))
	assert.Equal(t, "anthropic-secret", got[0].Get("X-Api-Key"))
}

func TestRedirectsStopAfterTen(t *testing.T) {
	n := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
	}))
	defer srv.Close()

	_, err := upstreamhttp.NewClient().Do(request(t, srv.URL+"/start"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped after 10 redirects")
	assert.Equal(t, 10, n)
}
