package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/durable/redistest"
)

const (
	quotaTokenRate = "token-of-the-rate-tenant-0123456789"
	quotaTokenConc = "token-of-the-conc-tenant-0123456789"
)

// quotaConfig is a replica sharing Redis with two tenants: "rate" may
// send 1 request/s (bursts of 3), "conc" run one execution at once.
func quotaConfig(whoURL, name string) string {
	return replicaConfig(whoURL, name, "", false) + `auth: {enabled: true}
tenants:
  - name: rate
    token_hashes: ["` + auth.HashToken(quotaTokenRate) + `"]
    rate: 1
    burst: 3
  - name: conc
    token_hashes: ["` + auth.HashToken(quotaTokenConc) + `"]
    max_concurrent: 1
`
}

func as(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// TestQuotaAcrossReplicas: with a shared Redis store, a tenant's rate
// and its max_concurrent hold across two replicas, not per replica; with
// the store down, each replica enforces them on its own (fail open to
// per-replica limits).
func TestQuotaAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	proxy := newTCPProxy(t, strings.TrimSuffix(strings.TrimPrefix(redistest.Start(t), "redis://"), "/0"))
	url := "redis://" + proxy.addr() + "/0"
	who := newWhoServer()
	defer who.Close()
	env := []string{durableEnv, "PTC_TEST_REDIS=" + url}
	a := startProcess(t, quotaConfig(who.URL, "a"), env...)
	b := startProcess(t, quotaConfig(who.URL, "b"), env...)
	clients := []*ptc.Client{dialClient(t, a.addr), dialClient(t, b.addr)}

	t.Run("rate", func(t *testing.T) {
		start := time.Now()
		ok, limited := 0, 0
		for i := range 12 {
			_, err := clients[i%2].Execute(as(quotaTokenRate), ptc.Request{Source: `return 1`})
			switch {
			case err == nil:
				ok++
			case ptc.CodeOf(err) == ptc.ResourceExhausted:
				limited++
			default:
				t.Fatal(err)
			}
		}
		// The burst of 3, and 1 a second after: each replica alone would
		// let 3 through at once, 6 in all.
		allowed := 3 + int(time.Since(start).Seconds()) + 1
		t.Logf("12 requests alternating over 2 replicas in %s: %d went through, %d rate-limited", time.Since(start).Round(time.Millisecond), ok, limited)
		if ok < 3 || ok > allowed {
			t.Fatalf("%d requests went through, want 3 to %d", ok, allowed)
		}
	})

	t.Run("concurrency", func(t *testing.T) {
		held, release := who.hold("a")
		running := make(chan error, 1)
		go func() {
			_, err := clients[0].Execute(as(quotaTokenConc), ptc.Request{Source: whoScript})
			running <- err
		}()
		<-held // the tenant's one execution runs on replica a
		_, err := clients[1].Execute(as(quotaTokenConc), ptc.Request{Source: whoScript})
		if ptc.CodeOf(err) != ptc.ResourceExhausted || !strings.Contains(err.Error(), "across the replicas") {
			release()
			t.Fatalf("a second execution on replica b: %v, want RESOURCE_EXHAUSTED across the replicas", err)
		}
		release()
		if err := <-running; err != nil {
			t.Fatal(err)
		}
		res, err := clients[1].Execute(as(quotaTokenConc), ptc.Request{Source: whoScript})
		if err != nil {
			t.Fatalf("after the first ended: %v", err)
		}
		var name string
		_ = json.Unmarshal(res.Result, &name)
		if name != "b" {
			t.Fatalf("ran on %q", name)
		}
	})

	t.Run("store down: per replica", func(t *testing.T) {
		proxy.down()
		start := time.Now()
		ok := 0
		for i := range 12 {
			_, err := clients[i%2].Execute(as(quotaTokenRate), ptc.Request{Source: `return 1`})
			switch {
			case err == nil:
				ok++
			case ptc.CodeOf(err) != ptc.ResourceExhausted:
				t.Fatal(err)
			}
		}
		// Each replica's own bucket: 3 at once each, and 1 a second.
		allowed := 6 + 2*(int(time.Since(start).Seconds())+1)
		t.Logf("store down: 12 requests alternating over 2 replicas: %d went through", ok)
		if ok < 6 || ok > allowed {
			t.Fatalf("%d requests went through with the store down, want 6 to %d (each replica's own burst)", ok, allowed)
		}
		// One execution at once, per replica now: b admits a second.
		held, release := who.hold("a")
		defer release()
		running := make(chan error, 1)
		go func() {
			_, err := clients[0].Execute(as(quotaTokenConc), ptc.Request{Source: whoScript})
			running <- err
		}()
		<-held
		if _, err := clients[1].Execute(as(quotaTokenConc), ptc.Request{Source: whoScript}); err != nil {
			t.Fatalf("a second execution on replica b with the store down: %v", err)
		}
		release()
		if err := <-running; err != nil {
			t.Fatal(err)
		}
	})
}

// tcpProxy forwards connections to a server until down, which closes
// its listener and every connection: the server seems gone.
type tcpProxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{} // closed when the acceptor ends
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l, done: make(chan struct{})}
	// The acceptor ends when the listener is closed (down, or cleanup);
	// each pair of copiers ends when either side is closed.
	go func() {
		defer close(p.done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) addr() string { return p.l.Addr().String() }

func (p *tcpProxy) down() {
	_ = p.l.Close()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
