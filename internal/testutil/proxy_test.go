package testutil

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends one line on c and reads the answer within d.
func roundTrip(c net.Conn, r *bufio.Reader, d time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyForwardsBlackholesAndResets(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("forward: %q, %v", got, err)
	}

	p.SetMode(ProxyBlackhole)
	_, err = roundTrip(c, r, 100*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole: want a timeout, got %v", err)
	}
	// A connection made during the blackhole is accepted, then silent.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("blackhole must accept: %v", err)
	}
	defer c2.Close()
	if _, err := roundTrip(c2, bufio.NewReader(c2), 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole, new connection: want a timeout, got %v", err)
	}

	p.SetMode(ProxyReset)
	c3, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c3.Close()
		_, err = roundTrip(c3, bufio.NewReader(c3), 2*time.Second)
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("reset: want a closed or reset connection, got %v", err)
	}

	p.SetMode(ProxyForward)
	c4, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if got, err := roundTrip(c4, bufio.NewReader(c4), 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("forward again: %q, %v", got, err)
	}
}

func TestProxyLatencyDelaysEachWay(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	p.SetLatency(30 * time.Millisecond)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := roundTrip(c, bufio.NewReader(c), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	// A lower bound only: the delay is added on the way there and back.
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Fatalf("round trip took %v, want ≥ 60ms with 30ms each way", el)
	}
}

func TestProxyResetClosesOpenConnections(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetMode(ProxyReset)
	if _, err := roundTrip(c, r, 2*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("want the open connection reset, got %v", err)
	}
	p.Close() // idempotent with the cleanup, waits for the goroutines
}
