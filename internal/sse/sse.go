// Package sse reads server-sent event streams as chat APIs send them: one
// event at a time, each delivered as soon as its closing blank line arrives.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLine bounds one line of an event stream. A chat chunk is a few
// hundred bytes; the bound only stops a broken upstream from growing memory
// without end.
const MaxLine = 4 << 20

// ErrLineTooLong reports a line longer than MaxLine.
var ErrLineTooLong = fmt.Errorf("sse: event stream line longer than %d bytes", MaxLine)

// Reader reads the data of server-sent events, one event at a time, as
// soon as each event's terminating blank line arrives: it never waits for
// more of the body than the current event. Fields other than data (event,
// id, retry) and comments (": keep-alive") are ignored: OpenAI-compatible
// streams carry everything in data, and Anthropic's repeat the event's name
// as the data's "type". One UTF-8 byte order mark at the start of the
// stream is ignored, as the event-stream format prescribes. Not safe for
// concurrent use.
type Reader struct {
	r     *bufio.Reader
	line  []byte // reused buffer for lines longer than the bufio buffer
	data  []byte // data of the event being read
	begun bool   // the stream's first line has been read (and its BOM dropped)
}

// bom is the UTF-8 byte order mark, ignored once at the stream's start.
var bom = []byte("\xEF\xBB\xBF")

// NewReader returns a Reader of the event stream r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the data of the next event, data lines joined by "\n". At a
// clean end of the body it returns io.EOF; a last event whose lines are
// complete but which lacks the closing blank line is still delivered first,
// while a last line cut in the middle is dropped. Other read errors are
// returned as they are.
func (s *Reader) Next() ([]byte, error) {
	s.data = s.data[:0]
	haveData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && haveData {
				return s.data, nil
			}
			return nil, err
		}
		if !s.begun {
			s.begun = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if haveData {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if haveData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		haveData = true
	}
}

// readLine returns the next complete line without its "\n" or "\r\n". A
// final line without "\n" is incomplete — the body was cut inside it — and
// is reported as io.EOF (or the read error) without its bytes.
func (s *Reader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if err == nil {
			var line []byte
			if len(s.line) == 0 {
				line = frag
			} else {
				s.line = append(s.line, frag...)
				line = s.line
			}
			if len(line) > MaxLine {
				return nil, ErrLineTooLong
			}
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		s.line = append(s.line, frag...)
		if len(s.line) > MaxLine {
			return nil, ErrLineTooLong
		}
	}
}
