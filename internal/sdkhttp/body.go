package sdkhttp

import (
	"io"
	"net/http"
)

// Body is an upstream answer read as items: Events, Chunks or Whole.
type Body interface {
	// Recv returns the next item, io.EOF after the last one.
	Recv() (Item, error)
	// Close releases the response body.
	Close() error
	// Response is the upstream response: status and headers.
	Response() *http.Response
}

var (
	_ Body = (*Events)(nil)
	_ Body = (*Chunks)(nil)
	_ Body = (*Whole)(nil)
)

// Response returns the upstream response.
func (e *Events) Response() *http.Response { return e.Resp }

// Chunks reads any other body in pieces of up to 32 KiB.
type Chunks struct {
	// Resp is the upstream response whose body is read.
	Resp *http.Response
	buf  []byte
}

// Response returns the upstream response.
func (c *Chunks) Response() *http.Response { return c.Resp }

// Recv returns the next piece, io.EOF at the end.
func (c *Chunks) Recv() (Item, error) {
	if c.buf == nil {
		c.buf = make([]byte, 32<<10)
	}
	for range 100 {
		n, err := c.Resp.Body.Read(c.buf)
		if n > 0 {
			return Item{Raw: append([]byte(nil), c.buf[:n]...), Content: true}, nil
		}
		if err != nil {
			return Item{}, err
		}
	}
	return Item{}, io.ErrNoProgress
}

// Close closes the body.
func (c *Chunks) Close() error { return c.Resp.Body.Close() }

// Whole is an answer read whole: one item, then io.EOF.
type Whole struct {
	// Resp is the upstream response, its body already read into Item.
	Resp *http.Response
	// Item is the answer, handed out by the first Recv.
	Item Item
	sent bool
}

// Response returns the upstream response.
func (w *Whole) Response() *http.Response { return w.Resp }

// Recv returns the item once, then io.EOF.
func (w *Whole) Recv() (Item, error) {
	if w.sent {
		return Item{}, io.EOF
	}
	w.sent = true
	return w.Item, nil
}

// Close does nothing: the body was read and closed already.
func (w *Whole) Close() error { return nil }
