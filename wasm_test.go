package ptc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
)

// buildGuest compiles an example guest to WASI with the local Go toolchain.
func buildGuest(t *testing.T, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./examples/wasm/"+name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the %s guest: %v\n%s", name, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWASMExpenseGuest: the expense analysis compiled from Go to WASI gives
// the JavaScript example's result, through the same tools and bridge; a
// second execution names the module by hash only.
func TestWASMExpenseGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	mod := buildGuest(t, "expenses")
	r := newDemoRunner(t)
	defer r.Close()
	want, _ := os.ReadFile("examples/expenses.expected.json")
	res, err := r.Execute(context.Background(), ptc.Request{Language: ptc.LanguageWASM, Module: mod})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	jsonEqual(t, res.Result, want)
	if res.Stats.ToolCalls != 26 {
		t.Fatalf("tool calls %d", res.Stats.ToolCalls)
	}
	sum := sha256.Sum256(mod)
	res, err = r.Execute(context.Background(), ptc.Request{Language: ptc.LanguageWASM, ModuleSHA256: hex.EncodeToString(sum[:])})
	succeeded(t, res, err)
	jsonEqual(t, res.Result, want)
}

func TestWASMRequestErrors(t *testing.T) {
	r := newDemoRunner(t)
	defer r.Close()
	cases := []struct {
		name string
		req  ptc.Request
		code ptc.Code
		msg  string
	}{
		{"no module", ptc.Request{Language: ptc.LanguageWASM}, ptc.InvalidArgument, "wasm_module is empty"},
		{"not wasm", ptc.Request{Language: ptc.LanguageWASM, Module: []byte("hello")}, ptc.InvalidArgument, "wasm_module"},
		{"unknown hash", ptc.Request{Language: ptc.LanguageWASM, ModuleSHA256: strings.Repeat("ab", 32)}, ptc.FailedPrecondition, "send the module bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Execute(context.Background(), tc.req)
			if ptc.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v", err)
			}
		})
	}
}
