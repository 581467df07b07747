package ptc_test

import (
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/durable/pgtest"
	"github.com/ptcrun/ptc/internal/durable/redistest"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestResumableSharedStores pauses on one Runner and resumes on another
// that shares only the key and the store — Redis, then PostgreSQL — and
// then tries the used continuations again on the first: the approved
// tool runs once.
func TestResumableSharedStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis and a PostgreSQL server")
	}
	stores := []struct {
		name string
		open func(t *testing.T) ptc.Durable
	}{
		{"redis", func(t *testing.T) ptc.Durable { return ptc.Durable{RedisURL: redistest.Start(t)} }},
		{"postgres", func(t *testing.T) ptc.Durable {
			dsn := pgtest.Start(t)
			if dsn == "" {
				return ptc.Durable{}
			}
			return ptc.Durable{PostgresDSN: pgtest.NewDatabase(t, dsn)}
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			d := st.open(t)
			if d.RedisURL == "" && d.PostgresDSN == "" {
				return
			}
			d.Keys, d.SigningKey, d.Parked = testKeys, "k1", -1
			var runs atomic.Int64
			runner := func() *ptc.Runner {
				r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...), ptc.WithTools(mailTool(&runs)), ptc.WithDurable(d))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close() })
				return r
			}
			a, b := runner(), runner()
			res := pauseAndResume(t, a, b, ptc.LanguageJavaScript, true)
			if string(res.Result) != `{"id":"sal-01","items":35,"total":9887.14,"mailed":true}` || runs.Load() != 1 {
				t.Fatalf("approved: %s, ran %d times", res.Result, runs.Load())
			}
		})
	}
}

// TestDurableOneStore: a Durable names at most one store.
func TestDurableOneStore(t *testing.T) {
	_, err := ptc.NewRunner(ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1",
		RedisURL: "redis://127.0.0.1:1/0", PostgresDSN: "host=/nowhere"}))
	if err == nil || err.Error() != "ptc: Durable: give one of StateFile, RedisURL and PostgresDSN, not 2" {
		t.Fatalf("NewRunner: %v", err)
	}
}
