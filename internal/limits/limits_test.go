package limits

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	p := Policy{
		Defaults: Limits{Timeout: time.Second, MaxToolCalls: 10},
		Ceilings: Limits{Timeout: 5 * time.Second, MaxToolCalls: 100, MaxOutputBytes: 1000},
	}
	cases := []struct {
		name   string
		req    Limits
		tenant Limits
		want   Limits
	}{
		{"zero takes defaults, missing defaults take ceilings", Limits{}, Limits{}, Limits{Timeout: time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000}},
		{"below ceiling kept", Limits{Timeout: 3 * time.Second, MaxToolCalls: 50}, Limits{}, Limits{Timeout: 3 * time.Second, MaxToolCalls: 50, MaxOutputBytes: 1000}},
		{"above ceiling clamped", Limits{Timeout: time.Hour, MaxToolCalls: 1e6, MaxOutputBytes: 1 << 30}, Limits{}, Limits{Timeout: 5 * time.Second, MaxToolCalls: 100, MaxOutputBytes: 1000}},
		{"negative treated as unset", Limits{Timeout: -1}, Limits{}, Limits{Timeout: time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000}},
		{"tenant ceiling narrows the ceiling", Limits{Timeout: time.Hour}, Limits{Timeout: 2 * time.Second}, Limits{Timeout: 2 * time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000}},
		{"tenant ceiling narrows the default", Limits{}, Limits{Timeout: 500 * time.Millisecond, MaxToolCalls: 3}, Limits{Timeout: 500 * time.Millisecond, MaxToolCalls: 3, MaxOutputBytes: 1000}},
		{"tenant ceiling above the server's adds nothing", Limits{Timeout: time.Hour}, Limits{Timeout: time.Hour}, Limits{Timeout: 5 * time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000}},
		{"tenant ceiling where the server has none", Limits{}, Limits{MaxLogBytes: 10}, Limits{Timeout: time.Second, MaxToolCalls: 10, MaxOutputBytes: 1000, MaxLogBytes: 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Resolve(tc.req, tc.tenant); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidateAndCheck(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		p    Policy
		want string
	}{
		{Policy{Defaults: Limits{Timeout: 10 * time.Minute}, Ceilings: Limits{Timeout: 5 * time.Minute}},
			"limits.defaults.timeout: 10m0s is above its ceiling 5m0s; lower the default or raise the ceiling"},
		{Policy{Defaults: Limits{MaxLogBytes: -1}}, "limits.defaults.max_log_bytes is negative"},
		{Policy{Ceilings: Limits{CPUTime: -1}}, "limits.ceilings.cpu_time is negative"},
		{Policy{Defaults: Limits{MemoryBytes: 2 << 20}, Ceilings: Limits{MemoryBytes: 1 << 20}}, "2MiB is above its ceiling 1MiB"},
	}
	for _, tc := range bad {
		err := tc.p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
	for _, f := range Fields() {
		var l Limits
		f.Set(&l, -1)
		if err := l.Check(); err == nil || !strings.Contains(err.Error(), "limits."+f.Name+" is negative") {
			t.Errorf("%s: %v", f.Name, err)
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

// TestTableCoversEveryField fails when a field of Limits has no row: each
// row must own a distinct field.
func TestTableCoversEveryField(t *testing.T) {
	var l Limits
	for i, f := range Fields() {
		f.Set(&l, int64(i+1))
	}
	for i, f := range Fields() {
		if got := f.Get(l); got != int64(i+1) {
			t.Errorf("%s reads %d, want %d: two rows share a field", f.Name, got, i+1)
		}
	}
	if got := len(Values(l)); got != len(Fields()) {
		t.Fatalf("%d values for %d fields", got, len(Fields()))
	}
	// Every field of the struct is set now: a field without a row stays 0.
	b, _ := json.Marshal(l)
	var back Limits
	if err := json.Unmarshal(b, &back); err != nil || back != l {
		t.Fatalf("round trip %s: %+v, %v", b, back, err)
	}
	if Defaults().Check() != nil || Ceilings().Check() != nil {
		t.Fatal("built-in defaults or ceilings are negative")
	}
	for _, f := range Fields() {
		if f.Default <= 0 || f.Ceiling < f.Default {
			t.Errorf("%s: default %d, ceiling %d", f.Name, f.Default, f.Ceiling)
		}
	}
}

func Values(l Limits) []int64 { return l.Values() }

func TestText(t *testing.T) {
	cases := []struct {
		field, in string
		want      int64
		format    string
	}{
		{"timeout", "1.5s", int64(1500 * time.Millisecond), "1.5s"},
		{"timeout", "0", 0, "0s"},
		{"memory_bytes", "64MiB", 64 << 20, "64MiB"},
		{"memory_bytes", "1000", 1000, "1000"},
		{"memory_bytes", "1GB", 1e9, "1000000000"},
		{"max_tool_calls", "42", 42, "42"},
	}
	for _, tc := range cases {
		f, _ := FieldByName(tc.field)
		v, err := f.Parse(tc.in)
		if err != nil || v != tc.want {
			t.Errorf("%s %q: %d, %v", tc.field, tc.in, v, err)
		}
		if got := f.Format(v); got != tc.format {
			t.Errorf("%s %d: %q, want %q", tc.field, v, got, tc.format)
		}
	}
	for _, bad := range []struct{ field, in string }{
		{"timeout", "5"}, {"timeout", "soon"}, {"memory_bytes", "12 parsecs"}, {"max_tool_calls", "3000000000"}, {"max_tool_calls", "1.5"},
	} {
		f, _ := FieldByName(bad.field)
		if _, err := f.Parse(bad.in); err == nil {
			t.Errorf("%s %q accepted", bad.field, bad.in)
		}
	}
}

func TestJSON(t *testing.T) {
	l := Limits{Timeout: 5 * time.Second, MemoryBytes: 64 << 20, MaxToolCalls: 3}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"timeout":"5s","memory_bytes":67108864,"max_tool_calls":3}` {
		t.Fatalf("%s", b)
	}
	var back Limits
	for _, in := range []string{string(b), `{"timeout":"5s","memory_bytes":"64MiB","max_tool_calls":3}`} {
		back = Limits{}
		if err := json.Unmarshal([]byte(in), &back); err != nil || back != l {
			t.Fatalf("%s: %+v, %v", in, back, err)
		}
	}
	for _, bad := range []string{`{"timeot":"5s"}`, `{"timeout":5}`, `{"max_tool_calls":"x"}`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestValue(t *testing.T) {
	var l Limits
	f, _ := FieldByName("cpu_time")
	v := Value{L: &l, Field: f}
	if err := v.Set("250ms"); err != nil || l.CPUTime != 250*time.Millisecond || v.String() != "250ms" {
		t.Fatalf("%+v %v %q", l, err, v.String())
	}
	if err := v.Set("fast"); err == nil {
		t.Fatal("accepted")
	}
	vs := Limits{Timeout: time.Second, MaxLogBytes: 7}.Values()
	back, err := FromValues(vs)
	if err != nil || back != (Limits{Timeout: time.Second, MaxLogBytes: 7}) {
		t.Fatalf("%+v %v", back, err)
	}
	if _, err := FromValues(vs[1:]); err == nil {
		t.Fatal("a short list accepted")
	}
	vs[3] = 1 << 40 // max_tool_calls is an int32
	if _, err := FromValues(vs); err == nil {
		t.Fatal("out of range accepted")
	}
	vs[3] = -1
	if _, err := FromValues(vs); err == nil {
		t.Fatal("negative accepted")
	}
}

// TestTableMatchesStruct: every row names a field of Limits by its offset,
// with the width and type its unit needs, and every field of Limits has a
// row.
func TestTableMatchesStruct(t *testing.T) {
	typ := reflect.TypeFor[Limits]()
	if typ.NumField() != len(Fields()) {
		t.Fatalf("Limits has %d fields, the table %d rows", typ.NumField(), len(Fields()))
	}
	for _, f := range Fields() {
		var sf reflect.StructField
		found := false
		for i := 0; i < typ.NumField(); i++ {
			if typ.Field(i).Offset == f.off {
				sf, found = typ.Field(i), true
			}
		}
		if !found {
			t.Errorf("%s: no field at offset %d", f.Name, f.off)
			continue
		}
		want := map[Unit]reflect.Type{Duration: reflect.TypeFor[time.Duration](), Bytes: reflect.TypeFor[int64](), Count: reflect.TypeFor[int32]()}[f.Unit]
		if sf.Type != want || f.i32 != (sf.Type.Kind() == reflect.Int32) {
			t.Errorf("%s: field %s is %s, the row wants %s", f.Name, sf.Name, sf.Type, want)
		}
	}
}

// BenchmarkCheckAndResolve is the per-request work of the limits table.
func BenchmarkCheckAndResolve(b *testing.B) {
	p := DefaultPolicy()
	req := Limits{Timeout: 5 * time.Second, MaxToolCalls: 10}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = req.Check()
		_ = p.Resolve(req, Limits{MemoryBytes: 1 << 20})
	}
}
