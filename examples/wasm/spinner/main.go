// Command spinner computes forever; ptc ends it with TIMEOUT (or CPU_LIMIT).
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o spinner.wasm ./examples/wasm/spinner
package main

import ptc "github.com/ptcrun/ptc/bridge/guest"

func main() {
	x := uint64(1)
	for i := uint64(0); ; i++ {
		x = x*6364136223846793005 + i
		if x == 0 { // never true in practice; keeps the loop from being removed
			break
		}
	}
	ptc.Return(x)
}
