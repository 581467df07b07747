package limits

import (
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	p := Policy{
		Defaults: Limits{Timeout: time.Second, MaxToolCalls: 10},
		Ceilings: Limits{Timeout: 5 * time.Second, MaxToolCalls: 100, MaxOutputBytes: 1000},
	}
	cases := []struct {
		name string
		req  Limits
		want Limits
	}{
		{"zero takes defaults, missing defaults take ceilings", Limits{}, Limits{Timeout: time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000}},
		{"below ceiling kept", Limits{Timeout: 3 * time.Second, MaxToolCalls: 50}, Limits{Timeout: 3 * time.Second, MaxToolCalls: 50, MaxOutputBytes: 1000}},
		{"above ceiling clamped", Limits{Timeout: time.Hour, MaxToolCalls: 1e6, MaxOutputBytes: 1 << 30}, Limits{Timeout: 5 * time.Second, MaxToolCalls: 100, MaxOutputBytes: 1000}},
		{"negative treated as unset", Limits{Timeout: -1}, Limits{Timeout: time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Resolve(tc.req); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidateAndCheck(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Policy{
		{Defaults: Limits{Timeout: time.Hour}, Ceilings: Limits{Timeout: time.Minute}},
		{Defaults: Limits{MaxLogBytes: -1}},
		{Ceilings: Limits{CPUTime: -1}},
	}
	for i, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("policy %d accepted", i)
		}
	}
	for _, l := range []Limits{{Timeout: -1}, {CPUTime: -1}, {MemoryBytes: -1}, {MaxToolCalls: -1}, {MaxConcurrentToolCalls: -1}, {MaxOutputBytes: -1}, {MaxLogBytes: -1}} {
		if err := l.CheckRequest(); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

func TestCap(t *testing.T) {
	l := Limits{Timeout: time.Minute, MaxToolCalls: 5, MaxLogBytes: 100}
	c := Limits{Timeout: time.Second, MaxToolCalls: 10, MaxOutputBytes: 50}
	want := Limits{Timeout: time.Second, MaxToolCalls: 5, MaxOutputBytes: 50, MaxLogBytes: 100}
	if got := l.Cap(c); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
