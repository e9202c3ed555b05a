package ownpanic_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/internal/ownpanic"
)

// Run recovers f's panic and logs it once at Warn, with its scope and
// source and the panic's text redacted; a function that returns is left
// alone.
func TestRunRecoversAndLogsRedacted(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ran := false
	assert.False(t, ownpanic.Run(log, nil, func() { ran = true }, "CHAT", ""))
	assert.True(t, ran)
	assert.Empty(t, buf.String(), "nothing to log")

	assert.True(t, ownpanic.Run(log, ownpanic.Redact([]string{"sk-secret-5"}),
		func() { panic("observer bug, key sk-secret-5, Authorization: Bearer echoed-6") }, "CHAT", "a"))
	out := buf.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "scope=CHAT source=a")
	assert.Contains(t, out, "observer bug")
	assert.NotContains(t, out, "sk-secret-5")
	assert.NotContains(t, out, "echoed-6", "an echoed credential header is redacted too")
	assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")), "one line")
}
