package worker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// TestWASMBoundsReachWorkers checks that a worker compiles under the
// module bounds of the supervisor's engine configuration, not its own
// defaults: a guest nested 6 deep runs under the defaults and is refused,
// naming the bound, by a pool configured with MaxNesting 4.
func TestWASMBoundsReachWorkers(t *testing.T) {
	// _start: block block block block block end end end end end end.
	nested := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x04\x01\x60\x00\x00" +
		"\x03\x02\x01\x00" +
		"\x05\x03\x01\x00\x01" + // memory 0, 1 page
		"\x07\x0a\x01\x06_start\x00\x00" +
		"\x0a\x13\x01\x11\x00\x02\x40\x02\x40\x02\x40\x02\x40\x02\x40\x0b\x0b\x0b\x0b\x0b\x0b")
	tests := []struct {
		name   string
		bounds wasm.Bounds
		want   string // the error message's telltale; empty: success
	}{
		{"defaults", wasm.Bounds{}, ""},
		{"max nesting 4", wasm.Bounds{MaxNesting: 4}, "wasm bound MaxNesting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, Config{Workers: 1, WASM: wasm.Config{Bounds: tt.bounds}})
			out := p.Run(context.Background(), newWASMJob(t, nested, `null`, nil))
			switch {
			case tt.want == "" && out.Err != nil:
				t.Fatalf("run: %v", out.Err)
			case tt.want != "" && (out.Err == nil || out.Err.Kind != fault.KindSyntax ||
				!errors.Is(out.Err, wasm.ErrInvalidModule) || !strings.Contains(out.Err.Message, tt.want)):
				t.Fatalf("run: %v, want SYNTAX_ERROR wrapping ErrInvalidModule naming %q", out.Err, tt.want)
			}
		})
	}
	b := wasm.Config{}.WithDefaults().Bounds
	if got := boundsOf(boundsPB(b)); got != b {
		t.Fatalf("bounds after the Init frame %+v, want %+v", got, b)
	}
}
