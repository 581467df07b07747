package service

import (
	"context"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/config"
)

// TestDurableLease: the lease section reaches the continuation manager;
// max_takeovers 0 takes no resume over (the manager's own zero would be
// its default).
func TestDurableLease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		yaml       string
		ttl, renew time.Duration
		takeovers  int
	}{
		{"defaults", "", 15 * time.Second, 5 * time.Second, 3},
		{"set", "durable:\n  lease: {ttl: 2s, renew_every: 500ms, max_takeovers: 7}\n", 2 * time.Second, 500 * time.Millisecond, 7},
		{"no takeovers", "durable:\n  lease: {max_takeovers: 0}\n", 15 * time.Second, 5 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			m, err := durableManager(context.Background(), c, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ttl, renew := m.Lease()
			if ttl != tc.ttl || renew != tc.renew || m.MaxTakeovers() != tc.takeovers {
				t.Fatalf("lease %s, renewed every %s, %d takeovers", ttl, renew, m.MaxTakeovers())
			}
		})
	}
}
