package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a local address to a server, so
// that a test can take the server away from its clients: Stop closes its
// listener and cuts every connection, Start listens again on the same
// address.
type Proxy struct {
	tb     testing.TB
	target string

	mu    sync.Mutex
	addr  string
	l     net.Listener // nil while stopped
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewProxy returns a started proxy to target (host:port), stopped when tb
// ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p := &Proxy{tb: tb, target: target, addr: "127.0.0.1:0"}
	p.Start()
	tb.Cleanup(p.Stop)
	return p
}

// Addr returns the address (host:port) the proxy listens on.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Start listens again, on the address of before.
func (p *Proxy) Start() {
	p.tb.Helper()
	l, err := net.Listen("tcp", p.Addr())
	if err != nil {
		p.tb.Fatal(err)
	}
	p.mu.Lock()
	p.l, p.addr = l, l.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.l != l { // stopped while dialing
				p.mu.Unlock()
				c.Close()
				s.Close()
				return
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(s, c); s.Close() })
			p.wg.Go(func() { io.Copy(c, s); c.Close() })
		}
	})
}

// Stop closes the listener and every connection, and waits for the
// forwarding to end. Stopping a stopped proxy does nothing.
func (p *Proxy) Stop() {
	p.mu.Lock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
