package service

import (
	"context"
	"testing"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestIdempotencyWired: the idempotency section reaches the request
// server: with the default retention a repeated Execute gets the first
// outcome (the same random number), with retention 0 it runs again.
func TestIdempotencyWired(t *testing.T) {
	for _, tt := range []struct {
		name string
		off  bool
		same bool
	}{
		{"default", false, true},
		{"off", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := loopback(t)
			if tt.off {
				c.Idempotency.Retention = 0
			}
			rt, err := NewRuntime(context.Background(), c, Options{InProcess: true, NoContinuations: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			req := &ptcv1.ExecuteRequest{ExecutionId: "wired", Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: "return Math.random()"}}
			a, err := rt.Server.Execute(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := rt.Server.Execute(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if (a.GetResultJson() == b.GetResultJson()) != tt.same {
				t.Fatalf("%s then %s, want the same: %v", a.GetResultJson(), b.GetResultJson(), tt.same)
			}
		})
	}
}
