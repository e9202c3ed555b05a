package testutil

import (
	"net"
	"sync"
	"testing"
	"time"
)

// ProxyMode is what a Proxy does with its connections.
type ProxyMode int

const (
	// ProxyForward copies bytes both ways (after the configured latency).
	ProxyForward ProxyMode = iota
	// ProxyBlackhole accepts connections and reads what clients send, but
	// forwards nothing and answers nothing: a silent peer, where every
	// operation only ends at its own deadline.
	ProxyBlackhole
	// ProxyReset closes every open connection with a TCP RST and resets new
	// ones as soon as they are accepted.
	ProxyReset
)

// Proxy is a loopback TCP proxy in front of one target address whose
// behaviour switches at run time: forward (with optional latency), blackhole
// or reset. Tests use it to cut a client off from a server that keeps
// running. Close (also registered with t.Cleanup) closes everything.
type Proxy struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	mode    ProxyMode
	latency time.Duration
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// StartProxy listens on 127.0.0.1 (a free port) and forwards to target.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testutil: proxy listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address, for the client to dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetLatency delays every chunk forwarded in either direction by d.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// SetMode switches the proxy's behaviour. ProxyReset also resets the
// connections open now; ProxyBlackhole stops forwarding on them.
func (p *Proxy) SetMode(m ProxyMode) {
	p.mu.Lock()
	p.mode = m
	var reset []net.Conn
	if m == ProxyReset {
		for c := range p.conns {
			reset = append(reset, c)
		}
	}
	p.mu.Unlock()
	for _, c := range reset {
		resetConn(c)
	}
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) state() (ProxyMode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.latency
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if mode, _ := p.state(); mode == ProxyReset {
			resetConn(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve joins client c to a new connection to the target.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	if !p.track(c) {
		_ = c.Close()
		return
	}
	defer p.untrack(c)
	var up net.Conn
	if mode, _ := p.state(); mode == ProxyForward {
		var err error
		if up, err = net.DialTimeout("tcp", p.target, 2*time.Second); err != nil {
			return
		}
		if !p.track(up) {
			_ = up.Close()
			return
		}
		defer p.untrack(up)
	}
	done := make(chan struct{}, 2)
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.pipe(up, c); done <- struct{}{} }()
	if up != nil {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.pipe(c, up); done <- struct{}{} }()
	}
	<-done
}

// pipe copies src to dst chunk by chunk, applying the mode at each chunk: a
// blackhole swallows the chunk, a nil dst swallows everything.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() {
		_ = src.Close()
		if dst != nil {
			_ = dst.Close()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			mode, lat := p.state()
			if lat > 0 {
				time.Sleep(lat)
			}
			if mode == ProxyForward && dst != nil {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// resetConn closes c with a TCP RST (SO_LINGER 0).
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
