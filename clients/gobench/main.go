// Command gobench measures the round trip of a client-served tool call
// with the Go client (ptc.Client.Run), the same way as the TypeScript and
// Python clients' benches (clients/typescript/bench/roundtrip.mjs,
// clients/python/bench/roundtrip.py), so that scripts/bench-clients.sh can
// print the three side by side against one ptcd.
//
//	gobench -server 127.0.0.1:7878 [-calls 2000] [-runs 200] [-inline]
//
// Two numbers, one JSON line on stdout:
//   - call: a script awaits `calls` calls of a client tool one after the
//     other; the time between the handler's starts of consecutive calls is
//     one full round trip (answer → server → script → next call → client).
//   - run: `runs` whole executions one after the other, each a Session
//     with one client tool call (start, call, answer, result).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

const callScript = "for (let i = 0; i < input.n; i++) await tools.echo({i}); return input.n"

const runScript = "return await tools.echo({i: input})"

const echoSchema = `{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}`

func main() {
	server := flag.String("server", "127.0.0.1:7878", "ptcd address")
	calls := flag.Int("calls", 2000, "sequential tool calls in the call measurement")
	runs := flag.Int("runs", 200, "sequential executions in the run measurement")
	inline := flag.Bool("inline", false, "serve the tool on the stream's goroutine (tools.Tool.Inline)")
	flag.Parse()
	if err := bench(*server, *calls, *runs, *inline); err != nil {
		fmt.Fprintln(os.Stderr, "gobench:", err)
		os.Exit(1)
	}
}

func bench(server string, calls, runs int, inline bool) error {
	c, err := ptc.Dial(server)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()

	var mu sync.Mutex
	var starts []time.Time
	echo := tools.Tool{
		Definition: tools.Definition{Name: "echo", InputSchema: json.RawMessage(echoSchema)},
		Handler: func(_ context.Context, call tools.Call) (json.RawMessage, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return call.Arguments, nil
		},
		Inline: inline,
	}
	limits := ptc.Limits{MaxToolCalls: int32(calls + 10), Timeout: 5 * time.Minute}
	loop := func(n int) error {
		starts = starts[:0]
		res, err := c.Run(ctx, ptc.Request{Source: callScript, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), Limits: limits}, echo)
		if err != nil {
			return err
		}
		if res.Error != nil {
			return fmt.Errorf("script failed: %s", res.Error.Message)
		}
		return nil
	}
	if err := loop(200); err != nil { // warm-up
		return err
	}
	if err := loop(calls); err != nil {
		return err
	}
	callRTT := make([]time.Duration, 0, len(starts))
	for i := 1; i < len(starts); i++ {
		callRTT = append(callRTT, starts[i].Sub(starts[i-1]))
	}

	runTimes := make([]time.Duration, 0, runs)
	for i := 0; i < runs+20; i++ {
		t0 := time.Now()
		res, err := c.Run(ctx, ptc.Request{Source: runScript, Input: json.RawMessage(fmt.Sprint(i))}, echo)
		if err != nil {
			return err
		}
		if res.Error != nil {
			return fmt.Errorf("script failed: %s", res.Error.Message)
		}
		if i >= 20 { // the first 20 warm up
			runTimes = append(runTimes, time.Since(t0))
		}
	}
	name := "go"
	if inline {
		name = "go (inline)"
	}
	out, _ := json.Marshal(map[string]any{
		"client":       name,
		"calls":        len(callRTT),
		"call_p50_us":  us(pct(callRTT, 50)),
		"call_p99_us":  us(pct(callRTT, 99)),
		"call_mean_us": us(mean(callRTT)),
		"runs":         len(runTimes),
		"run_p50_us":   us(pct(runTimes, 50)),
		"run_mean_us":  us(mean(runTimes)),
	})
	fmt.Println(string(out))
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
