package gate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw/gate"
)

func TestNoopRefusesADoneContextAsEveryGateDoes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := gate.Noop{}.TryEnter(ctx, "a")
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), `TryEnter "a"`)
	assert.False(t, d.Allowed)

	d, err = gate.Noop{}.TryEnter(context.Background(), "a")
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}
