// Command outflood writes to stdout forever, ignoring write errors; ptc ends
// it with OUTPUT_LIMIT.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o outflood.wasm ./examples/wasm/outflood
package main

import (
	"bytes"
	"os"
)

func main() {
	chunk := append([]byte{'"'}, bytes.Repeat([]byte("flood "), 1024)...)
	for {
		_, _ = os.Stdout.Write(chunk)
	}
}
