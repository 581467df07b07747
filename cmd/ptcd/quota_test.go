package main

import (
	"context"
	"encoding/json"
	"strings"
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
// and its max_concurrent hold across two replicas, not per replica.
func TestQuotaAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	url := redistest.Start(t)
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
}
