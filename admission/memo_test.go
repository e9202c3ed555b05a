package admission_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/internal/testutil"
)

func TestMemoSetUntilOnlyMovesForward(t *testing.T) {
	t0 := testutil.Epoch
	var m admission.Memo
	assert.False(t, m.Active("a", t0), "an unknown source is not cooling down")

	m.SetUntil("a", t0.Add(30*time.Second))
	assert.Equal(t, 30*time.Second, m.Remaining("a", t0))

	m.SetUntil("a", t0.Add(10*time.Second))
	assert.Equal(t, 30*time.Second, m.Remaining("a", t0), "a shorter deadline never cuts a running cooldown")

	m.SetUntil("a", t0.Add(90*time.Second))
	assert.Equal(t, 90*time.Second, m.Remaining("a", t0), "a longer deadline lengthens it")

	assert.True(t, m.Active("a", t0.Add(89*time.Second)))
	assert.False(t, m.Active("a", t0.Add(90*time.Second)), "the deadline itself is no longer cooling down")
}

func TestMemoSetUntilNowLeavesNoCooldown(t *testing.T) {
	t0 := testutil.Epoch
	m := admission.NewMemo()
	m.SetUntil("a", t0) // a HalfOpen rejection: now + RetryAfter 0
	assert.False(t, m.Active("a", t0))
	assert.Zero(t, m.Remaining("a", t0))
}
