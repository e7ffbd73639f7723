package postgres

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// partitionProxy forwards TCP connections to a server, and goes silent on
// demand as a network partition does: it passes no byte either way and
// keeps every socket open (no RST, no FIN reaches either side), so the
// client's kernel still accepts what it sends and nothing comes back.
// Healed, it passes on what it held, in order, as TCP's retransmissions
// would, and ends the connections the client closed meanwhile. One
// connection can be held on its own, one way or both (hold), while the
// others pass: a partition that cuts one path only.
type partitionProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	cond   *sync.Cond
	silent bool
	closed bool
	conns  []net.Conn
	// held are the connections held on their own, by the client's
	// address (as the client sees it, its local address): [0] the
	// client's bytes to the server, [1] the server's to the client.
	held map[string]*[2]bool
	// pending counts, per client and way, the reads a pump holds and has
	// not passed on yet (release waits for them).
	pending map[string]*[2]int
}

// hold stops one connection's traffic, that of the client whose local
// address is client: toServer its bytes to the server, toClient the
// server's answers. The other connections pass. release lets it through
// again, passing on what it held, in order.
func (p *partitionProxy) hold(client string, toServer, toClient bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[string]*[2]bool{}
	}
	p.held[client] = &[2]bool{toServer, toClient}
}

func (p *partitionProxy) release(client string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, client)
	p.cond.Broadcast()
	for p.pending[client] != nil && (p.pending[client][0] > 0 || p.pending[client][1] > 0) && !p.closed {
		p.cond.Wait()
	}
}

// passed marks a read of the way dir of client's connection as passed
// on (written, or given up).
func (p *partitionProxy) passed(client string, dir int) {
	p.mu.Lock()
	p.pending[client][dir]--
	p.mu.Unlock()
	p.cond.Broadcast()
}

// newPartitionProxy starts a proxy on 127.0.0.1 to target (host:port),
// closed when the test ends.
func newPartitionProxy(t testing.TB, target string) *partitionProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partitionProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// throughProxy starts a partitionProxy to u's server and returns it with
// u rewritten to connect through it.
func throughProxy(t testing.TB, u string) (*partitionProxy, string) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		t.Skipf("the test server's URL %q names no host:port to put a proxy before", u)
	}
	p := newPartitionProxy(t, pu.Host)
	pu.Host = p.ln.Addr().String()
	return p, pu.String()
}

// silence stops the traffic both ways; heal lets it through again.
func (p *partitionProxy) silence() { p.set(true) }
func (p *partitionProxy) heal()    { p.set(false) }

// healLosing heals, but the connections open during the silence are lost,
// as when a partition outlasts TCP's patience: what they held is dropped
// and both ends see them closed.
func (p *partitionProxy) healLosing() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	p.set(false)
}

func (p *partitionProxy) set(silent bool) {
	p.mu.Lock()
	p.silent = silent
	p.mu.Unlock()
	p.cond.Broadcast()
}

// wait returns once the proxy is not silent and the way dir (0: to the
// server, 1: to the client) of client's connection is not held; false
// when the proxy is closed.
func (p *partitionProxy) wait(client string, dir int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[string]*[2]int{}
	}
	if p.pending[client] == nil {
		p.pending[client] = &[2]int{}
	}
	p.pending[client][dir]++
	for (p.silent || p.held[client] != nil && p.held[client][dir]) && !p.closed {
		p.cond.Wait()
	}
	return !p.closed
}

// track records c to close with the proxy; false when it is closed.
func (p *partitionProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *partitionProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(server) {
			return
		}
		addr := client.RemoteAddr().String()
		p.wg.Go(func() { p.pump(server, client, addr, 0) })
		p.wg.Go(func() { p.pump(client, server, addr, 1) })
	}
}

// pump copies src to dst, the way dir of client's connection, holding
// each read (and the end of src) while the proxy is silent or that way is
// held; when src ends, dst is closed.
func (p *partitionProxy) pump(dst, src net.Conn, client string, dir int) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if !p.wait(client, dir) {
			p.passed(client, dir)
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				p.passed(client, dir)
				return
			}
		}
		p.passed(client, dir)
		if err != nil {
			return
		}
	}
}

// close heals, closes the listener and every connection, and waits for
// the proxy's goroutines.
func (p *partitionProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.cond.Broadcast()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
