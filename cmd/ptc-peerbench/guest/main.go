// Command guest is the WebAssembly guest of ptc-peerbench: the workloads of
// the shared sandbox comparison, written as the comparison kit's own Go
// guest writes them (the same JSON decoding, the same calls), on ptc's
// guest SDK, so that ptc's WebAssembly engine and bare wazero run the same
// program. The workload is the input's "workload".
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o guest.wasm ./cmd/ptc-peerbench/guest
package main

import (
	"math"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

var sink [][]int

func main() {
	var in struct {
		Workload string `json:"workload"`
	}
	if err := ptc.Input(&in); err != nil {
		ptc.Fail(err)
	}
	switch in.Workload {
	case "trivial":
		ptc.Return(map[string]int{"ok": 1})
	case "chain":
		s := 0
		for i := 0; i < 100; i++ {
			var r struct {
				I int `json:"i"`
			}
			if err := ptc.Call("echo", map[string]int{"i": i}, &r); err != nil {
				ptc.Fail(err)
			}
			s += r.I
		}
		ptc.Return(map[string]int{"sum": s})
	case "expense":
		type over struct {
			Member string  `json:"member"`
			Total  float64 `json:"total"`
		}
		res := []over{}
		for k := 0; k < 20; k++ {
			m := "member" + string(rune('0'+k/10)) + string(rune('0'+k%10))
			var items []struct {
				Amount float64 `json:"amount"`
			}
			if err := ptc.Call("get_expenses", map[string]string{"member": m}, &items); err != nil {
				ptc.Fail(err)
			}
			t := 0.0
			for _, it := range items {
				t += it.Amount
			}
			if t > 11000 {
				res = append(res, over{m, math.Round(t*100) / 100})
			}
		}
		ptc.Return(res)
	case "spin":
		for {
		}
	case "spinAfterAwait":
		_ = ptc.Call("echo", map[string]int{"i": 0}, nil)
		for {
		}
	case "membomb":
		for {
			b := make([]int, 0)
			for i := 0; i < 65536; i++ {
				b = append(b, i)
			}
			sink = append(sink, b)
		}
	default:
		ptc.Return(nil)
	}
}
