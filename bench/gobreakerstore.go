package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// GobreakerStore implements gobreaker v2's SharedDataStore on go-redis the way
// gobreaker's own v2/redis store does: Lock is a redsync-style mutex
// (SET key token NX PX expiry, retried with a random delay, released by a
// compare-and-delete script) and the state is a plain GET/SET of gobreaker's
// JSON. gobreaker's store is not served by the module proxy, so this one is
// written here from its description.
//
// One GobreakerStore models one process: it remembers the token of the lock it
// holds, so it must not be shared by callers that lock concurrently. Give
// every simulated process its own store (they may share the client).
type GobreakerStore struct {
	client goredis.UniversalClient
	// Expiry is the lock's PX (gobreaker's store uses 5 s).
	Expiry time.Duration
	// Tries and MinDelay/MaxDelay are the retry schedule of one Lock call
	// (redsync's defaults: 32 tries, 50–250 ms apart).
	Tries              int
	MinDelay, MaxDelay time.Duration

	token string
}

var _ gobreaker.SharedDataStore = (*GobreakerStore)(nil)

// NewGobreakerStore returns a store with redsync's default retry schedule.
func NewGobreakerStore(c goredis.UniversalClient) *GobreakerStore {
	return &GobreakerStore{
		client:   c,
		Expiry:   5 * time.Second,
		Tries:    32,
		MinDelay: 50 * time.Millisecond,
		MaxDelay: 250 * time.Millisecond,
	}
}

// errLockTaken is returned by Lock when every try found the lock held.
var errLockTaken = errors.New("bench: gobreaker lock still held after every try")

// unlockScript deletes the lock only when this store still owns it.
var unlockScript = goredis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// Lock takes the named mutex, retrying like redsync.
func (s *GobreakerStore) Lock(name string) error {
	ctx := context.Background()
	token := newToken()
	for try := 0; try < s.Tries; try++ {
		if try > 0 {
			time.Sleep(s.MinDelay + time.Duration(mrand.Int64N(int64(s.MaxDelay-s.MinDelay)+1)))
		}
		ok, err := s.client.SetNX(ctx, name, token, s.Expiry).Result()
		if err != nil {
			return fmt.Errorf("bench: gobreaker lock %q: %w", name, err)
		}
		if ok {
			s.token = token
			return nil
		}
	}
	return errLockTaken
}

// Unlock releases the named mutex if this store holds it.
func (s *GobreakerStore) Unlock(name string) error {
	n, err := unlockScript.Run(context.Background(), s.client, []string{name}, s.token).Int()
	if err != nil {
		return fmt.Errorf("bench: gobreaker unlock %q: %w", name, err)
	}
	if n != 1 {
		return fmt.Errorf("bench: gobreaker unlock %q: lock not held (expired or taken over)", name)
	}
	return nil
}

// GetData reads the shared state; a missing key reads as no data, which
// gobreaker treats as "no shared state yet".
func (s *GobreakerStore) GetData(name string) ([]byte, error) {
	b, err := s.client.Get(context.Background(), name).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	return b, err
}

// SetData writes the shared state.
func (s *GobreakerStore) SetData(name string, data []byte) error {
	return s.client.Set(context.Background(), name, data, 0).Err()
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
