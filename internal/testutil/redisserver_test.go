package testutil

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartRedisStopRestart(t *testing.T) {
	s := StartRedis(t)
	reply, err := s.Do("SET", "k", "v")
	require.NoError(t, err)
	assert.Equal(t, "OK", reply)

	s.Stop()
	_, err = s.Do("PING")
	require.Error(t, err, "a stopped server answers nothing")
	s.Stop() // stopping twice is harmless

	s.Restart(t)
	reply, err = s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", reply)
	_, err = s.Do("GET", "k")
	assert.ErrorIs(t, err, ErrNilReply, "no persistence: the key is gone after a restart")
}
