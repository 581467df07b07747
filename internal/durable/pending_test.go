package durable

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// countingStore counts the reads of stored states.
type countingStore struct {
	Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, id string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

// TestPendingCalls: a continuation carries the calls its state waits for,
// inline or stored, and Open gives them without reading the state.
func TestPendingCalls(t *testing.T) {
	approval := core.Action{Kind: core.ActionApproval, Seq: 3, Tool: "t"}
	ask := func(seq int32, tool string) core.Action {
		return core.Action{Kind: core.ActionClientTool, Seq: seq, Tool: tool}
	}
	defs := []tools.Definition{{Name: "ask"}, {Name: "typed", OutputSchema: json.RawMessage(`{"type":"integer"}`)}}
	many := make([]core.Action, 3000)
	for i := range many {
		many[i] = ask(int32(i+4), fmt.Sprintf("tool_%04d_with_a_long_name", i))
	}
	cases := []struct {
		name    string
		pending []core.Action
		stored  bool
		want    []PendingCall
		ok      bool
	}{
		{"an approval", []core.Action{approval}, false, []PendingCall{{Seq: 3, Kind: core.ActionApproval, Tool: "t"}}, true},
		{"client tools, plain and typed", []core.Action{ask(4, "typed"), approval, ask(5, "ask"), ask(6, "typed")}, false,
			[]PendingCall{{Seq: 4, Kind: core.ActionClientTool, Tool: "typed"}, {Seq: 3, Kind: core.ActionApproval, Tool: "t"},
				{Seq: 5, Kind: core.ActionClientTool, Tool: "ask", PlainOutput: true}, {Seq: 6, Kind: core.ActionClientTool, Tool: "typed"}}, true},
		{"a client tool the state does not declare", []core.Action{ask(4, "gone")}, false, []PendingCall{{Seq: 4, Kind: core.ActionClientTool, Tool: "gone"}}, true},
		{"stored", []core.Action{ask(4, "ask"), approval}, true,
			[]PendingCall{{Seq: 4, Kind: core.ActionClientTool, Tool: "ask", PlainOutput: true}, {Seq: 3, Kind: core.ActionApproval, Tool: "t"}}, true},
		{"too many to carry", many, false, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := testState()
			st.ClientTools = defs
			st.Journal.Pending = tc.pending
			store := &countingStore{Store: NewMemoryStore(0)}
			cfg := Config{Keys: []Key{key1}, Store: store}
			if tc.stored {
				cfg.MaxTokenBytes = 300
			}
			m := newManager(t, cfg)
			s, ferr := m.Seal(context.Background(), "a", st)
			if ferr != nil {
				t.Fatal(ferr)
			}
			o, ferr := m.Open(context.Background(), s.Token, "a")
			if ferr != nil {
				t.Fatal(ferr)
			}
			got, ok := o.Pending()
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("pending %v %+v, want %v %+v", ok, got, tc.ok, tc.want)
			}
			if store.gets.Load() != 0 || o.stored != tc.stored {
				t.Fatalf("open read the store %d times (stored %v)", store.gets.Load(), o.stored)
			}
			if _, ferr := o.State(context.Background()); ferr != nil {
				t.Fatal(ferr)
			}
			if want := map[bool]int64{true: 1}[tc.stored]; store.gets.Load() != want {
				t.Fatalf("the state was read %d times, want %d", store.gets.Load(), want)
			}
		})
	}
}

// TestPendingOlderTokens: a continuation without the pending calls (as
// issued before they were carried) still opens and resumes; one whose
// pending calls were altered fails its signature check.
func TestPendingOlderTokens(t *testing.T) {
	m := newManager(t, Config{Keys: []Key{key1}})
	s, ferr := m.Seal(context.Background(), "a", testState())
	if ferr != nil {
		t.Fatal(ferr)
	}
	h, body, _, _, err := parse(s.Token)
	if err != nil || h.pending == nil {
		t.Fatalf("parse: %v, pending %v", err, h.pending)
	}
	h.pending = nil
	old := seal(m.keys[0], h, body, nil)
	o, ferr := m.Open(context.Background(), old, "a")
	if ferr != nil {
		t.Fatal(ferr)
	}
	if _, ok := o.Pending(); ok {
		t.Fatal("an older continuation has pending calls")
	}
	if st, ferr := o.State(context.Background()); ferr != nil || st.Journal.Pending[0].CallID != "c3" {
		t.Fatalf("state: %v", ferr)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(s.Token)
	// version, flags, key id, pause id, times, tenant, the pending calls'
	// length, their tools' count and the first one's length: its name.
	i := 3 + len(key1.ID) + pauseIDLen + 16 + 1 + len("a") + 1 + 2
	if raw[i] != 't' {
		t.Fatalf("byte %d is %q, not the pending tool's name", i, raw[i])
	}
	raw[i] = 'u'
	if _, ferr := m.Open(context.Background(), base64.RawURLEncoding.EncodeToString(raw), "a"); ferr == nil || ferr.Reason != fault.ReasonContinuationTampered {
		t.Fatalf("altered pending calls: %v", ferr)
	}
}

// FuzzDecodePending: no bytes make decodePending panic or accept a call
// of an unknown kind.
func FuzzDecodePending(f *testing.F) {
	st := testState()
	st.ClientTools = []tools.Definition{{Name: "ask"}}
	st.Journal.Pending = append(st.Journal.Pending, core.Action{Kind: core.ActionClientTool, Seq: 4, Tool: "ask"})
	f.Add(encodePending(st))
	f.Add([]byte{0, 0})
	f.Add([]byte{1, 1, 't', 0, 1, 3, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		calls, err := decodePending(b)
		if err != nil {
			return
		}
		for _, c := range calls {
			if c.Kind != core.ActionClientTool && c.Kind != core.ActionApproval || c.Seq < 0 || c.PlainOutput && c.Kind != core.ActionClientTool {
				t.Fatalf("accepted %+v", c)
			}
		}
	})
}

// TestOpenReadsNoState: opening a stored continuation, valid or refused,
// reads nothing from the store.
func TestOpenReadsNoState(t *testing.T) {
	store := &countingStore{Store: NewMemoryStore(0)}
	m := newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 300, Store: store, TTL: time.Hour})
	s, ferr := m.Seal(context.Background(), "a", testState())
	if ferr != nil {
		t.Fatal(ferr)
	}
	for _, tenant := range []string{"a", "b"} {
		_, _ = m.Open(context.Background(), s.Token, tenant)
	}
	if n := store.gets.Load(); n != 0 {
		t.Fatalf("the store was read %d times", n)
	}
}
