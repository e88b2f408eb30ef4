package sqltest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// A Proxy forwards TCP connections to a database server, and can cut
// them, as a server that stops or restarts does: Cut closes every
// connection and refuses new ones until Restore.
type Proxy struct {
	tb       testing.TB
	upstream string
	addr     string

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy listens on a free port of 127.0.0.1 and forwards each
// connection to upstream (host:port). It stops at the end of the test.
func NewProxy(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{tb: tb, upstream: upstream, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	tb.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Via returns dsn, a URL such as a PostgreSQL DSN, with its host:port
// replaced by the proxy's.
func (p *Proxy) Via(dsn string) string {
	p.tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		p.tb.Fatalf("sqltest: proxy: %v", err)
	}
	u.Host = p.addr
	return u.String()
}

// Cut closes the connections through the proxy and stops listening, so
// that new connections are refused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the same address after Cut.
func (p *Proxy) Restore() {
	p.tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; binding it again can take a few
	// tries while the kernel lets go of it.
	for range 100 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		p.tb.Errorf("sqltest: proxy: listening again on %s: %v", p.addr, err)
		return
	}
	p.serve(ln)
}

// serve accepts on ln until it closes. Called with p.mu held or before p
// is shared.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(ln, c)
			}()
		}
	}()
}

// forward copies between c and a new connection upstream until either
// closes.
func (p *Proxy) forward(ln net.Listener, c net.Conn) {
	up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln {
		// Cut while this one was dialling.
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}
