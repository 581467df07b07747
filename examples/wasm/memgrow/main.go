// Command memgrow allocates memory until it is refused; ptc ends it with
// MEMORY_LIMIT. Input (optional): {"step_kib": 1024} sets the allocation
// size.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o memgrow.wasm ./examples/wasm/memgrow
package main

import ptc "github.com/ptcrun/ptc/bridge/guest"

func main() {
	var in struct {
		StepKiB int `json:"step_kib"`
	}
	_ = ptc.Input(&in)
	if in.StepKiB <= 0 {
		in.StepKiB = 1024
	}
	var keep [][]byte
	total := 0
	for {
		b := make([]byte, in.StepKiB<<10)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page
		}
		keep = append(keep, b)
		total += len(b)
		if total < 0 {
			break
		}
	}
	ptc.Return(len(keep))
}
