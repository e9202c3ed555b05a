package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
)

// readEvents reads every event of body and the error that ended the read.
func readEvents(r io.Reader) ([]string, error) {
	s := NewReader(r)
	var events []string
	for {
		data, err := s.Next()
		if err != nil {
			return events, err
		}
		events = append(events, string(data))
	}
}

func TestSSEReaderParsesEvents(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "one event per data line", body: "data: a\n\ndata: b\n\n", want: []string{"a", "b"}},
		{name: "CRLF line endings", body: "data: a\r\n\r\ndata: b\r\n\r\n", want: []string{"a", "b"}},
		{name: "no space after the colon", body: "data:a\n\n", want: []string{"a"}},
		{name: "only one leading space is removed", body: "data:  a\n\n", want: []string{" a"}},
		{name: "multi-line data joined by newline", body: "data: a\ndata: b\n\n", want: []string{"a\nb"}},
		{name: "comments and other fields ignored", body: ": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: a\n\n", want: []string{"a"}},
		{name: "blank lines between events", body: "\n\n\ndata: a\n\n\n", want: []string{"a"}},
		{name: "last event without blank line", body: "data: a\n\ndata: [DONE]\n", want: []string{"a", "[DONE]"}},
		{name: "last line cut in the middle is dropped", body: "data: a\n\ndata: {\"cho", want: []string{"a"}},
		{name: "empty body", body: "", want: nil},
		{name: "a leading byte order mark is ignored", body: "\xEF\xBB\xBFdata: a\n\ndata: b\n\n", want: []string{"a", "b"}},
		{name: "a leading byte order mark before a comment", body: "\xEF\xBB\xBF: hi\n\ndata: a\n\n", want: []string{"a"}},
		{name: "only the stream's first byte order mark is ignored", body: "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n\xEF\xBB\xBFdata: c\n\n", want: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per Read: events must not depend on read boundaries.
			events, err := readEvents(iotest.OneByteReader(strings.NewReader(tt.body)))
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, tt.want, events)
		})
	}
}

func TestSSEReaderLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // past the bufio buffer
	events, err := readEvents(strings.NewReader("data: " + long + "\n\n"))
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []string{long}, events)

	_, err = readEvents(strings.NewReader("data: " + strings.Repeat("x", MaxLine+1) + "\n\n"))
	assert.ErrorIs(t, err, ErrLineTooLong)
}

func TestSSEReaderPassesReadErrorsOn(t *testing.T) {
	boom := errors.New("connection reset")
	events, err := readEvents(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	assert.Equal(t, []string{"a"}, events)
	assert.ErrorIs(t, err, boom)
}
