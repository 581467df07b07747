// Command minimal is the smallest useful Go guest: it returns its input
// wrapped in {"echo": input}.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o minimal.wasm ./examples/wasm/minimal
package main

import (
	"encoding/json"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

func main() {
	in, err := ptc.InputRaw()
	if err != nil {
		ptc.Fail(err)
	}
	if err := ptc.Return(map[string]json.RawMessage{"echo": in}); err != nil {
		ptc.Fail(err)
	}
}
