// Command loop runs a tight compute loop of input.n iterations (default
// 50,000,000) and returns the checksum: the benchmark of per-loop
// termination checks (see internal/runtime/wasm's WithoutLoopChecks).
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o loop.wasm ./examples/wasm/loop
package main

import ptc "github.com/ptcrun/ptc/bridge/guest"

func main() {
	var in struct{ N uint64 }
	_ = ptc.Input(&in)
	if in.N == 0 {
		in.N = 50_000_000
	}
	x := uint64(1)
	for i := uint64(0); i < in.N; i++ {
		x = x*6364136223846793005 + i
	}
	ptc.Return(x)
}
