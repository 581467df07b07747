package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// answerModule is a hand-assembled WASI command whose _start writes
// {"answer":42} to stdout with fd_write. Real guests are built from source,
// e.g. GOOS=wasip1 GOARCH=wasm go build ./examples/wasm/minimal.
var answerModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x02, 0x60, 0x04, 0x7f, 0x7f, 0x7f,
	0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00, 0x02, 0x23, 0x01, 0x16, 0x77, 0x61, 0x73, 0x69, 0x5f, 0x73,
	0x6e, 0x61, 0x70, 0x73, 0x68, 0x6f, 0x74, 0x5f, 0x70, 0x72, 0x65, 0x76, 0x69, 0x65, 0x77, 0x31,
	0x08, 0x66, 0x64, 0x5f, 0x77, 0x72, 0x69, 0x74, 0x65, 0x00, 0x00, 0x03, 0x02, 0x01, 0x01, 0x05,
	0x03, 0x01, 0x00, 0x01, 0x07, 0x13, 0x02, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00,
	0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x01, 0x0a, 0x0f, 0x01, 0x0d, 0x00, 0x41, 0x01,
	0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x1a, 0x0b, 0x0b, 0x21, 0x02, 0x00, 0x41, 0x00,
	0x0b, 0x08, 0x40, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x41, 0xc0, 0x00, 0x0b, 0x0d,
	0x7b, 0x22, 0x61, 0x6e, 0x73, 0x77, 0x65, 0x72, 0x22, 0x3a, 0x34, 0x32, 0x7d,
}

func ExampleEngine_Run() {
	ctx := context.Background()
	engine, err := wasm.New(wasm.Config{MaxModules: 16})
	if err != nil {
		panic(err)
	}
	defer engine.Close(ctx)

	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	out := engine.Run(ctx, &runtime.Job{
		ExecutionID: "example",
		Module:      answerModule,
		Limits:      lim,
		Tools:       bridge.New(bridge.Config{ExecutionID: "example", MaxCalls: lim.MaxToolCalls}),
	})
	if out.Err != nil {
		fmt.Println("failed:", out.Err)
		return
	}
	fmt.Println(string(out.Result))
	// Output: {"answer":42}
}

func ExampleEngine_RunHash() {
	ctx := context.Background()
	engine, err := wasm.New(wasm.Config{})
	if err != nil {
		panic(err)
	}
	defer engine.Close(ctx)

	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	job := &runtime.Job{ExecutionID: "example", Limits: lim, Tools: bridge.New(bridge.Config{})}

	// A client first sends only the hash; the server asks for the bytes
	// when it does not hold the module.
	sum := sha256.Sum256(answerModule)
	hash := hex.EncodeToString(sum[:])
	if _, err := engine.RunHash(ctx, hash, job); errors.Is(err, wasm.ErrUnknownModule) {
		fmt.Println("unknown module: send the bytes")
		if _, err := engine.Compile(ctx, answerModule); err != nil {
			panic(err)
		}
	}
	out, err := engine.RunHash(ctx, hash, job)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out.Result))
	// Output:
	// unknown module: send the bytes
	// {"answer":42}
}
