package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
)

// quotaStep is one call of a quota test: a Put of size bytes for tenant
// expiring after expires (negative: already expired), or a Delete.
type quotaStep struct {
	name    string
	del     bool
	id      string
	tenant  string
	size    int
	expires time.Duration
	// want is the refusal expected; nil: the call succeeds.
	want *QuotaError
}

// testQuotaSteps runs steps against s under q.
func testQuotaSteps(t *testing.T, s Store, q Quota, steps []quotaStep) {
	t.Helper()
	ctx := context.Background()
	for _, st := range steps {
		var err error
		if st.del {
			err = s.Delete(ctx, st.id)
		} else {
			q := q
			q.Tenant = st.tenant
			err = s.Put(ctx, st.id, bytes.Repeat([]byte{'s'}, st.size), time.Now().Add(st.expires), q)
		}
		var qe *QuotaError
		switch {
		case st.want == nil && err != nil:
			t.Fatalf("%s: %v", st.name, err)
		case st.want == nil:
		case !errors.As(err, &qe) || !errors.Is(err, ErrQuota):
			t.Fatalf("%s: want a quota error, got %v", st.name, err)
		case *qe != *st.want:
			t.Fatalf("%s: refused with %+v, want %+v", st.name, *qe, *st.want)
		}
	}
}

// TestStoreQuota runs the bounds on stored states against every kind of
// store: a tenant's bound, the total bound, bytes given back by a Delete
// and by expiry, the empty tenant, and, where the store outlives its
// client, the same usage seen by another client (another replica, or the
// file reopened).
func TestStoreQuota(t *testing.T) {
	const hour = time.Hour
	q := Quota{MaxTenantBytes: 100, MaxTotalBytes: 250}
	steps := []quotaStep{
		{name: "a's first state", id: "a1", tenant: "a", size: 60, expires: hour},
		{name: "a's second passes a's bound", id: "a2", tenant: "a", size: 60, expires: hour,
			want: &QuotaError{Limit: 100, Used: 60, Size: 60}},
		{name: "another tenant has its own bound", id: "b1", tenant: "b", size: 60, expires: hour},
		{name: "a delete gives the bytes back", del: true, id: "a1"},
		{name: "a's second fits now", id: "a2", tenant: "a", size: 60, expires: hour},
		{name: "a delete of what is not there", del: true, id: "a1"},
		{name: "a third tenant fits in the total", id: "c1", tenant: "c", size: 90, expires: hour},
		{name: "a fourth passes the total", id: "d1", tenant: "d", size: 90, expires: hour,
			want: &QuotaError{Total: true, Limit: 250, Used: 210, Size: 90}},
		{name: "an expired state", id: "dold", tenant: "d", size: 40, expires: -time.Second},
		{name: "its bytes are back at the next put", id: "d1", tenant: "d", size: 40, expires: hour},
		{name: "d's state resumed", del: true, id: "d1"},
		{name: "b's state resumed", del: true, id: "b1"},
		{name: "the empty tenant (no authentication)", id: "e1", tenant: "", size: 100, expires: hour},
		{name: "the empty tenant's bound", id: "e2", tenant: "", size: 1, expires: hour,
			want: &QuotaError{Limit: 100, Used: 100, Size: 1}},
		{name: "a state larger than the bound", id: "f1", tenant: "f", size: 101, expires: hour,
			want: &QuotaError{Limit: 100, Used: 0, Size: 101}},
	}
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			s, again := k.open(t)
			testQuotaSteps(t, s, q, steps)
			if again == nil {
				return
			}
			// Held: a2 (a, 60), c1 (c, 90), e1 ("", 100): 250 in all.
			testQuotaSteps(t, again(), q, []quotaStep{
				{name: "a's bound through another client", id: "a3", tenant: "a", size: 41, expires: hour,
					want: &QuotaError{Limit: 100, Used: 60, Size: 41}},
				{name: "the total through another client", id: "g1", tenant: "g", size: 1, expires: hour,
					want: &QuotaError{Total: true, Limit: 250, Used: 250, Size: 1}},
				{name: "a delete through another client", del: true, id: "c1"},
				{name: "room made through another client", id: "g1", tenant: "g", size: 90, expires: hour},
			})
		})
	}
}

// TestStoreQuotaConcurrent: of concurrent Puts for one tenant, exactly
// as many as the bound admits are stored, on every kind of store.
func TestStoreQuotaConcurrent(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			var wg sync.WaitGroup
			var stored, refused atomic.Int32
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := s.Put(context.Background(), fmt.Sprintf("p%d", i), make([]byte, 30), time.Now().Add(time.Hour), Quota{Tenant: "a", MaxTenantBytes: 100})
					switch {
					case err == nil:
						stored.Add(1)
					case errors.Is(err, ErrQuota):
						refused.Add(1)
					default:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if stored.Load() != 3 || refused.Load() != 5 {
				t.Fatalf("%d stored and %d refused, want 3 and 5", stored.Load(), refused.Load())
			}
		})
	}
}

// TestStoreQuotaClock: a state's bytes come back once the store's clock
// passes its expiry, not before: the stores whose clock a test sets (a
// server's clock decides for the others; TestStoreQuota puts expired
// states into them instead).
func TestStoreQuotaClock(t *testing.T) {
	for _, k := range storeKinds {
		if k.name != "memory" && k.name != "file" {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			var c skewed
			switch s := s.(type) {
			case *memoryStore:
				s.now = c.now
			case *boltStore:
				s.now = c.now
			}
			q := Quota{MaxTenantBytes: 100}
			testQuotaSteps(t, s, q, []quotaStep{
				{name: "a state for a minute", id: "a1", tenant: "a", size: 80, expires: time.Minute},
				{name: "another before it expires", id: "a2", tenant: "a", size: 80, expires: time.Hour,
					want: &QuotaError{Limit: 100, Used: 80, Size: 80}},
			})
			c.lapse("")
			testQuotaSteps(t, s, q, []quotaStep{
				{name: "another once it expired", id: "a2", tenant: "a", size: 80, expires: time.Hour},
			})
		})
	}
}

// TestSealQuota: a pause whose state would pass the tenant's bound ends
// with a PAUSE_LIMIT breach naming durable.max_bytes_per_tenant, with
// the limit and the bytes observed; another tenant still pauses, and a
// resume (Keep) gives the bytes back, on every kind of store.
func TestSealQuota(t *testing.T) {
	st := testState()
	noise := make([]byte, 24<<10)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	st.Journal.Calls[0].Result = json.RawMessage(`"` + base64.StdEncoding.EncodeToString(noise) + `"`)
	ctx := context.Background()
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			// Room for one state of ~25 KiB per tenant, two in all.
			m := newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 2048, Store: s,
				MaxBytesPerTenant: 40 << 10, MaxStoredBytes: 60 << 10})
			first, ferr := m.Seal(ctx, "alice", st)
			if ferr != nil {
				t.Fatal(ferr)
			}
			_, ferr = m.Seal(ctx, "alice", st)
			if ferr == nil || ferr.Kind != fault.KindPauseLimit || ferr.Limit != 40<<10 || ferr.Observed <= ferr.Limit ||
				!strings.Contains(ferr.Message, "durable.max_bytes_per_tenant") || !errors.Is(ferr.Cause, ErrQuota) {
				t.Fatalf("second pause of a tenant: %+v", ferr)
			}
			if _, ferr := m.Seal(ctx, "bob", st); ferr != nil {
				t.Fatalf("another tenant: %v", ferr)
			}
			_, ferr = m.Seal(ctx, "carol", st)
			if ferr == nil || ferr.Kind != fault.KindPauseLimit || ferr.Limit != 60<<10 || !strings.Contains(ferr.Message, "durable.max_bytes") {
				t.Fatalf("past the total: %+v", ferr)
			}
			// Resumed: the state is dropped and its bytes are back.
			o, ferr := m.Open(ctx, first.Token, "alice")
			if ferr != nil {
				t.Fatal(ferr)
			}
			answers := sha256.Sum256(nil)
			if u, ferr := m.Consume(ctx, o, answers, time.Now().Add(time.Minute)); u != nil || ferr != nil {
				t.Fatalf("consume: %+v %v", u, ferr)
			}
			if err := m.Keep(ctx, o, 1, answers, []byte("done")); err != nil {
				t.Fatal(err)
			}
			if _, ferr := m.Seal(ctx, "alice", st); ferr != nil {
				t.Fatalf("a pause after the resume: %v", ferr)
			}
		})
	}
}

// TestDefaultMaxBytesPerTenant: a Manager bounds each tenant's stored
// states unless told otherwise; a negative bound is none.
func TestDefaultMaxBytesPerTenant(t *testing.T) {
	for _, c := range []struct {
		name string
		set  int64
		want int64
	}{
		{"unset", 0, DefaultMaxBytesPerTenant},
		{"set", 5 << 20, 5 << 20},
		{"none", -1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, Config{Keys: []Key{key1}, MaxBytesPerTenant: c.set})
			if m.cfg.MaxBytesPerTenant != c.want {
				t.Fatalf("MaxBytesPerTenant %d, want %d", m.cfg.MaxBytesPerTenant, c.want)
			}
		})
	}
}
