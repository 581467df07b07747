package durable

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

var (
	key1 = Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	key2 = Key{ID: "k2", Secret: []byte("another secret, thirty-two bytes")}
)

func testState() *State {
	return &State{ExecutionID: "ex1", Script: core.Script{Language: core.LanguageJavaScript, Source: "return 1"},
		Input: json.RawMessage(`{"a":1}`), Limits: limits.Defaults(), AllowedTools: []string{"t"}, Seed: 7,
		ClockStart: time.Unix(100, 0).UTC(), PausedAt: time.Unix(200, 0).UTC(),
		Usage: Usage{Wall: time.Second, CPU: time.Millisecond, Pauses: 1, LogEntries: 2},
		Journal: core.Journal{
			Calls: []core.JournalEntry{{Seq: 1, Tool: "t", Args: json.RawMessage(`{}`), Result: json.RawMessage(`[1,2]`)},
				{Seq: 2, Tool: "t", Args: json.RawMessage(`{}`), Failure: &core.CallFailure{Name: "ToolError", Code: "x", Message: "m"}}},
			Pending: []core.Action{{CallID: "c3", Kind: core.ActionApproval, Seq: 3, Tool: "t", Arguments: json.RawMessage(`{}`), Reason: "r"}},
		}}
}

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	m := newManager(t, Config{Keys: []Key{key1}})
	s, ferr := m.Seal(context.Background(), "tenant-a", testState())
	if ferr != nil {
		t.Fatal(ferr)
	}
	o, ferr := m.Open(context.Background(), s.Token, "tenant-a")
	if ferr != nil {
		t.Fatal(ferr)
	}
	st, ferr := o.State()
	if ferr != nil {
		t.Fatal(ferr)
	}
	want := testState()
	got, _ := json.Marshal(st)
	w, _ := json.Marshal(want)
	// The decoder fills the idempotency keys of pending calls.
	if !strings.Contains(string(got), `"IdempotencyKey":"ex1/3"`) ||
		strings.Replace(string(got), `"IdempotencyKey":"ex1/3"`, `"IdempotencyKey":""`, 1) != string(w) {
		t.Fatalf("round trip:\n got %s\nwant %s", got, w)
	}
	if strings.Contains(s.Token, "return 1") {
		t.Fatal("the state is readable in the token")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(s.Token)
	if strings.Contains(string(raw), "return 1") || strings.Contains(string(raw), `[1,2]`) {
		t.Fatal("the state is not encrypted")
	}
}

func code(ferr *fault.Error) fault.Code {
	if ferr == nil {
		return fault.CodeOK
	}
	return ferr.Code
}

// TestOpenRefuses: every way a continuation can be wrong is refused with
// its code.
func TestOpenRefuses(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	m := newManager(t, Config{Keys: []Key{key1}, TTL: time.Hour, Now: clock})
	s, _ := m.Seal(context.Background(), "a", testState())
	raw, _ := base64.RawURLEncoding.DecodeString(s.Token)
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x20
		return base64.RawURLEncoding.EncodeToString(b)
	}
	rotated := newManager(t, Config{Keys: []Key{key2, key1}, Now: clock})
	foreign := newManager(t, Config{Keys: []Key{key2}, Now: clock})
	later := newManager(t, Config{Keys: []Key{key1}, Now: func() time.Time { return now.Add(2 * time.Hour) }})
	cases := []struct {
		name   string
		m      *Manager
		tok    string
		tenant string
		code   fault.Code
		msg    string
		reason string
	}{
		{"valid", m, s.Token, "a", fault.CodeOK, "", ""},
		{"rotated: the old key still verifies", rotated, s.Token, "a", fault.CodeOK, "", ""},
		{"foreign key", foreign, s.Token, "a", fault.CodeInvalidArgument, `signed with key "k1"`, fault.ReasonContinuationUnknownKey},
		{"other tenant", m, s.Token, "b", fault.CodePermissionDenied, "another tenant", fault.ReasonContinuationWrongTenant},
		{"expired", later, s.Token, "a", fault.CodeFailedPrecondition, "expired", fault.ReasonContinuationExpired},
		{"empty", m, "", "a", fault.CodeInvalidArgument, "empty", fault.ReasonContinuationMalformed},
		{"not base64url", m, "a+b/c==", "a", fault.CodeInvalidArgument, "malformed", fault.ReasonContinuationMalformed},
		{"too short", m, "AQ", "a", fault.CodeInvalidArgument, "malformed", fault.ReasonContinuationMalformed},
		{"unknown version", m, flip(0), "a", fault.CodeInvalidArgument, "version", fault.ReasonContinuationMalformed},
		{"unknown flags", m, flip(1), "a", fault.CodeInvalidArgument, "flags", fault.ReasonContinuationMalformed},
		{"key id altered", m, flip(4), "a", fault.CodeInvalidArgument, "key", fault.ReasonContinuationUnknownKey},
		{"pause id altered", m, flip(7), "a", fault.CodeInvalidArgument, "signature", fault.ReasonContinuationTampered},
		{"expiry altered", m, flip(30), "a", fault.CodeInvalidArgument, "signature", fault.ReasonContinuationTampered},
		{"body altered", m, flip(len(raw) - 40), "a", fault.CodeInvalidArgument, "signature", fault.ReasonContinuationTampered},
		{"MAC altered", m, flip(len(raw) - 1), "a", fault.CodeInvalidArgument, "signature", fault.ReasonContinuationTampered},
		{"truncated", m, base64.RawURLEncoding.EncodeToString(raw[:len(raw)-10]), "a", fault.CodeInvalidArgument, "", ""},
		{"too long", m, strings.Repeat("A", 3<<20), "a", fault.CodeInvalidArgument, "longer", fault.ReasonContinuationMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, ferr := tc.m.Open(context.Background(), tc.tok, tc.tenant)
			if ferr == nil {
				_, ferr = o.State()
			}
			if code(ferr) != tc.code || (ferr != nil && !strings.Contains(ferr.Message, tc.msg)) {
				t.Fatalf("got %v, want %s with %q", ferr, tc.code, tc.msg)
			}
			// A truncated token fails wherever the cut falls: malformed,
			// or its signature; either way it has a reason.
			if ferr != nil && (ferr.Reason != tc.reason && tc.reason != "" || ferr.Reason == "") {
				t.Fatalf("reason %q, want %q", ferr.Reason, tc.reason)
			}
		})
	}
}

// TestConsumeOnce: a continuation is used once.
func TestConsumeOnce(t *testing.T) {
	m := newManager(t, Config{Keys: []Key{key1}})
	s, _ := m.Seal(context.Background(), "", testState())
	for i, want := range []fault.Code{fault.CodeOK, fault.CodeFailedPrecondition} {
		o, ferr := m.Open(context.Background(), s.Token, "")
		if ferr != nil {
			t.Fatal(ferr)
		}
		ferr = m.Consume(context.Background(), o)
		if got := code(ferr); got != want || (ferr != nil && ferr.Reason != fault.ReasonContinuationUsed) {
			t.Fatalf("use %d: %v", i+1, ferr)
		}
	}
}

// TestLargeStates: a state over the token cap is refused without a store
// (PAUSE_LIMIT) and stored with one; the stored body is bound to its
// token.
func TestLargeStates(t *testing.T) {
	st := testState()
	noise := make([]byte, 48<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	st.Journal.Calls[0].Result = json.RawMessage(`"` + base64.StdEncoding.EncodeToString(noise) + `"`)
	m := newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 2048})
	if _, ferr := m.Seal(context.Background(), "", st); ferr == nil || ferr.Kind != fault.KindPauseLimit || ferr.Limit != 2048 {
		t.Fatalf("no store: %v", ferr)
	}
	store := NewMemoryStore()
	m = newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 2048, Store: store})
	s, ferr := m.Seal(context.Background(), "", st)
	if ferr != nil || len(s.Token) > 200 {
		t.Fatalf("stored: %v, %d bytes", ferr, len(s.Token))
	}
	o, ferr := m.Open(context.Background(), s.Token, "")
	if ferr != nil {
		t.Fatal(ferr)
	}
	got, ferr := o.State()
	if ferr != nil || string(got.Journal.Calls[0].Result) != string(st.Journal.Calls[0].Result) {
		t.Fatal(ferr)
	}
	// Another body under the same id is refused.
	_ = store.Put(context.Background(), s.PauseID, []byte("other"), time.Now().Add(time.Hour))
	if _, ferr := m.Open(context.Background(), s.Token, ""); code(ferr) != fault.CodeInternal {
		t.Fatalf("swapped body: %v", ferr)
	}
	// A stored state that is gone, and a server without the store.
	_ = store.Delete(context.Background(), s.PauseID)
	if _, ferr := m.Open(context.Background(), s.Token, ""); code(ferr) != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationStateGone {
		t.Fatalf("state gone: %v", ferr)
	}
	storeless := newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 2048})
	if _, ferr := storeless.Open(context.Background(), s.Token, ""); code(ferr) != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationNeedsStore {
		t.Fatalf("no store: %v", ferr)
	}
	if _, ferr := m.Seal(context.Background(), "", st); ferr != nil {
		t.Fatal(ferr)
	}
	small := newManager(t, Config{Keys: []Key{key1}, MaxStateBytes: 1024, MaxTokenBytes: 2048, Store: store})
	if _, ferr := small.Seal(context.Background(), "", st); ferr == nil || ferr.Kind != fault.KindPauseLimit {
		t.Fatalf("over max_state_bytes: %v", ferr)
	}
}

func TestKeys(t *testing.T) {
	for _, k := range []Key{{ID: "", Secret: key1.Secret}, {ID: "a b", Secret: key1.Secret}, {ID: "k", Secret: []byte("short")}} {
		if _, err := New(Config{Keys: []Key{k}}); err == nil {
			t.Errorf("key %q accepted", k.ID)
		}
	}
	if _, err := New(Config{Keys: []Key{key1, key1}}); err == nil {
		t.Error("a key id twice")
	}
	m, err := New(Config{})
	if err != nil || !m.Ephemeral() {
		t.Fatal(err)
	}
}

// FuzzOpen: no input makes Open or State panic, and only a sealed
// continuation opens.
func FuzzOpen(f *testing.F) {
	m, _ := New(Config{Keys: []Key{key1}})
	s, _ := m.Seal(context.Background(), "", testState())
	f.Add(s.Token)
	f.Add("")
	f.Add("AQABazE")
	f.Fuzz(func(t *testing.T, tok string) {
		o, ferr := m.Open(context.Background(), tok, "")
		if ferr == nil {
			if _, ferr := o.State(); ferr != nil {
				t.Fatalf("a verified continuation does not decode: %v", ferr)
			}
		}
	})
}
