package testutil

import (
	"net/http"
	"sync"
)

// queryCheck records the query of every request and, once a query is
// required, answers any other with 400 — as Azure OpenAI answers a request
// without its api-version.
type queryCheck struct {
	mu   sync.Mutex
	last string
	want *string
}

func (q *queryCheck) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.mu.Lock()
		q.last = r.URL.RawQuery
		want := q.want
		q.mu.Unlock()
		if want != nil && r.URL.RawQuery != *want {
			writeError(w, Reply{Status: http.StatusBadRequest, Message: "unexpected query on " + r.URL.Path, Code: "bad_query"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireQuery makes the fake answer 400 to any request whose raw URL query
// is not exactly query.
func (u *Upstream) RequireQuery(query string) {
	u.queries.mu.Lock()
	defer u.queries.mu.Unlock()
	u.queries.want = &query
}

// LastQuery returns the raw URL query of the last request to any path.
func (u *Upstream) LastQuery() string {
	u.queries.mu.Lock()
	defer u.queries.mu.Unlock()
	return u.queries.last
}
