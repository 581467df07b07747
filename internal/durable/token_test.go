package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
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
	st, ferr := o.State(context.Background())
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
	capped := newManager(t, Config{Keys: []Key{key1}, TTL: time.Hour, Now: clock, MaxTokenBytes: len(s.Token) + 100})
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
		// A genuine header padded past the cap is refused for its length,
		// not decoded and found altered.
		{"genuine token padded past the cap", capped, s.Token + strings.Repeat("A", 4096), "a", fault.CodeInvalidArgument, "longer", fault.ReasonContinuationMalformed},
		{"genuine token padded by 300 KiB", m, s.Token + strings.Repeat("A", 300<<10), "a", fault.CodeInvalidArgument, "longer", fault.ReasonContinuationMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, ferr := tc.m.Open(context.Background(), tc.tok, tc.tenant)
			if ferr == nil {
				_, ferr = o.State(context.Background())
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

// TestConsumeOnce: a continuation is used once; later uses get the use
// recorded (the answers' digest), then the outcome kept for the
// retention period, encrypted and bound to the continuation.
func TestConsumeOnce(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	m := newManager(t, Config{Keys: []Key{key1}, Now: clock, OutcomeRetention: time.Minute})
	s, _ := m.Seal(context.Background(), "", testState())
	answers := sha256.Sum256([]byte("answers"))
	open := func() *Opened {
		o, ferr := m.Open(context.Background(), s.Token, "")
		if ferr != nil {
			t.Fatal(ferr)
		}
		return o
	}
	o := open()
	if u, ferr := m.Used(context.Background(), o); u != nil || ferr != nil {
		t.Fatalf("used before its use: %+v %v", u, ferr)
	}
	if u, ferr := m.Consume(context.Background(), o, answers, now.Add(time.Minute)); u != nil || ferr != nil {
		t.Fatalf("first use: %+v %v", u, ferr)
	}
	u, ferr := m.Consume(context.Background(), open(), sha256.Sum256([]byte("other")), now)
	if ferr != nil || u == nil || u.Finished || u.Answers != answers || !u.RunningUntil.Equal(now.Add(time.Minute)) {
		t.Fatalf("second use: %+v %v", u, ferr)
	}
	if _, kept, ferr := m.Outcome(context.Background(), o); kept || ferr != nil {
		t.Fatalf("outcome while running: %v %v", kept, ferr)
	}
	if err := m.Keep(context.Background(), o, 1, answers, []byte("the outcome")); err != nil {
		t.Fatal(err)
	}
	if u, ferr := m.Used(context.Background(), open()); ferr != nil || u == nil || !u.Finished || u.Answers != answers {
		t.Fatalf("used after keep: %+v %v", u, ferr)
	}
	b, kept, ferr := m.Outcome(context.Background(), open())
	if ferr != nil || !kept || string(b) != "the outcome" {
		t.Fatalf("outcome: %q %v %v", b, kept, ferr)
	}
	// The store holds it encrypted.
	raw, _ := m.used.Outcome(context.Background(), o.PauseID)
	if bytes.Contains(raw, []byte("the outcome")) {
		t.Fatal("the outcome is stored in clear")
	}
	// Past the retention it is no longer kept; the use still is.
	now = now.Add(time.Minute + time.Second)
	if _, kept, _ := m.Outcome(context.Background(), open()); kept {
		t.Fatal("outcome kept past its retention")
	}
	if u, _ := m.Used(context.Background(), open()); u == nil || !u.Finished {
		t.Fatalf("use forgotten with the outcome: %+v", u)
	}
}

// TestOutcomeBound: a kept outcome opens only for its own continuation.
func TestOutcomeBound(t *testing.T) {
	store := NewMemoryStore(0)
	m := newManager(t, Config{Keys: []Key{key1}, Store: store})
	a, _ := m.Seal(context.Background(), "", testState())
	b, _ := m.Seal(context.Background(), "", testState())
	oa, _ := m.Open(context.Background(), a.Token, "")
	ob, _ := m.Open(context.Background(), b.Token, "")
	var d [32]byte
	_, _ = m.Consume(context.Background(), oa, d, time.Now())
	_, _ = m.Consume(context.Background(), ob, d, time.Now())
	if err := m.Keep(context.Background(), oa, 1, d, []byte("a's outcome")); err != nil {
		t.Fatal(err)
	}
	// b's id with a's outcome (a store written by someone else).
	raw, _ := store.Outcome(context.Background(), oa.PauseID)
	_ = store.Finish(context.Background(), ob.PauseID, 1, Use{Answers: d, Finished: true}.mark(), raw, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	if _, _, ferr := m.Outcome(context.Background(), ob); code(ferr) != fault.CodeInternal {
		t.Fatalf("another continuation's outcome: %v", ferr)
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
	store := NewMemoryStore(0)
	m = newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 2048, Store: store})
	s, ferr := m.Seal(context.Background(), "", st)
	if ferr != nil || len(s.Token) > 200 {
		t.Fatalf("stored: %v, %d bytes", ferr, len(s.Token))
	}
	o, ferr := m.Open(context.Background(), s.Token, "")
	if ferr != nil {
		t.Fatal(ferr)
	}
	got, ferr := o.State(context.Background())
	if ferr != nil || string(got.Journal.Calls[0].Result) != string(st.Journal.Calls[0].Result) {
		t.Fatal(ferr)
	}
	// Open reads nothing from the store; State finds another body under
	// the same id, or none, and refuses it.
	stateOf := func(m *Manager) *fault.Error {
		o, ferr := m.Open(context.Background(), s.Token, "")
		if ferr != nil {
			t.Fatalf("open: %v", ferr)
		}
		_, ferr = o.State(context.Background())
		return ferr
	}
	_ = store.Put(context.Background(), s.PauseID, []byte("other"), time.Now().Add(time.Hour), Quota{})
	if ferr := stateOf(m); code(ferr) != fault.CodeInternal {
		t.Fatalf("swapped body: %v", ferr)
	}
	// A stored state that is gone (never stored here, or deleted when
	// its continuation was used), and a server without the store.
	_ = store.Delete(context.Background(), s.PauseID)
	if ferr := stateOf(m); code(ferr) != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationStateGone {
		t.Fatalf("state gone: %v", ferr)
	}
	store = NewMemoryStore(0)
	m = newManager(t, Config{Keys: []Key{key1}, MaxTokenBytes: 2048, Store: store})
	if ferr := stateOf(m); code(ferr) != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationStateGone {
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
			if _, ferr := o.State(context.Background()); ferr != nil {
				t.Fatalf("a verified continuation does not decode: %v", ferr)
			}
		}
	})
}

// TestTruncatedContinuation: a cut continuation is refused with the reason
// docs/durable.md gives. The token carries no length for an inline state
// (the state runs up to the MAC), so an inline token cut after its header
// cannot be told from an altered one: it fails its signature check. Cut
// inside its header, cut to a length base64url cannot have, or a stored
// state's reference cut short, it is malformed.
func TestTruncatedContinuation(t *testing.T) {
	m := newManager(t, Config{Keys: []Key{key1}, TTL: time.Hour})
	inline, ferr := m.Seal(context.Background(), "a", testState())
	if ferr != nil {
		t.Fatal(ferr)
	}
	stored := newManager(t, Config{Keys: []Key{key1}, TTL: time.Hour, MaxTokenBytes: 64, Store: NewMemoryStore(0)})
	ref, ferr := stored.Seal(context.Background(), "a", testState())
	if ferr != nil {
		t.Fatal(ferr)
	}
	cutBytes := func(tok string, n int) string {
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		return base64.RawURLEncoding.EncodeToString(raw[:len(raw)-n])
	}
	cutText := func(tok string, n int) string { return tok[:len(tok)-n] }
	cases := []struct {
		name   string
		m      *Manager
		tok    string
		reason string
	}{
		{"inline, last byte", m, cutBytes(inline.Token, 1), fault.ReasonContinuationTampered},
		{"inline, the MAC", m, cutBytes(inline.Token, macLen), fault.ReasonContinuationTampered},
		{"inline, into the state", m, cutBytes(inline.Token, macLen+8), fault.ReasonContinuationTampered},
		{"inline, 12 characters", m, cutText(inline.Token, 12), fault.ReasonContinuationTampered},
		{"inline, into the header", m, inline.Token[:20], fault.ReasonContinuationMalformed},
		{"inline, not a base64url length", m, cutText(inline.Token, len(inline.Token)%4+3), fault.ReasonContinuationMalformed},
		{"stored, last byte", stored, cutBytes(ref.Token, 1), fault.ReasonContinuationMalformed},
		{"stored, 12 characters", stored, cutText(ref.Token, 12), fault.ReasonContinuationMalformed},
		{"stored, the MAC", stored, cutBytes(ref.Token, macLen), fault.ReasonContinuationMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, ferr := tc.m.Open(context.Background(), tc.tok, "a")
			if ferr == nil {
				_, ferr = o.State(context.Background())
			}
			if code(ferr) != fault.CodeInvalidArgument || ferr.Reason != tc.reason {
				t.Fatalf("got %v (reason %q), want INVALID_ARGUMENT with %s", ferr, reasonOf(ferr), tc.reason)
			}
		})
	}
}

func reasonOf(ferr *fault.Error) string {
	if ferr == nil {
		return ""
	}
	return ferr.Reason
}
