package mcpserve_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/testenv"
)

// TestRefusedRequestsLogSampled: requests refused for their credentials
// are logged through a sampler — a flood of them writes at most the
// sampler's burst at once plus its rate — and every record says how many
// were left out before it.
func TestRefusedRequestsLogSampled(t *testing.T) {
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	srv := startHTTP(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t), Logger: log}), 0)
	const sent = 1000 // all written only if sending took more than 95 s
	for i := 0; i < sent; i++ {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	var written, counted int64
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Msg        string
			Suppressed *int64
		}
		if json.Unmarshal([]byte(line), &rec) != nil || !strings.Contains(rec.Msg, "authentication failed") {
			continue
		}
		if rec.Suppressed == nil {
			t.Fatalf("a record without its suppressed count: %s", line)
		}
		written++
		counted += *rec.Suppressed
	}
	// Every refusal is either a record or counted by a later one (the
	// ones after the last record are not counted yet).
	if written == 0 || written+counted > sent {
		t.Fatalf("%d records counting %d more, for %d refusals", written, counted, sent)
	}
	if written == sent {
		t.Fatalf("all %d refusals were logged: nothing is sampled", sent)
	}
}
