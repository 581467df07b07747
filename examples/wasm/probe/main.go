// Command probe reports what a WebAssembly guest can see of its sandbox:
// arguments, environment, working directory, filesystem, clocks, random
// bytes, stdin, and every ptc_v1 host function through the guest SDK (a
// call, an unknown tool, a batch). The parity test runs it under each
// isolation of the Go API and compares the reports.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o probe.wasm ./examples/wasm/probe
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

func main() {
	report := map[string]any{"args": os.Args, "env": os.Environ()}
	wd, err := os.Getwd()
	report["cwd"] = fmt.Sprint(wd, " ", errString(err))
	_, err = os.ReadDir("/")
	report["readdir_root"] = errString(err)
	_, err = os.Open("/etc/passwd")
	report["open_passwd"] = errString(err)
	report["hostname"] = fmt.Sprint(os.Hostname())
	t1, t2 := time.Now(), time.Now()
	report["clock"] = []string{t1.UTC().Format(time.RFC3339Nano), t2.UTC().Format(time.RFC3339Nano)}
	b := make([]byte, 8)
	_, err = rand.Read(b)
	report["random"] = hex.EncodeToString(b) + errString(err)
	in, err := ptc.InputRaw()
	report["input"] = string(in) + errString(err)
	out, err := ptc.CallRaw("get_budget_by_level", []byte(`{"level":"senior"}`))
	report["call"] = string(out) + errString(err)
	_, err = ptc.CallRaw("no.such.tool", nil)
	report["unknown_tool"] = errString(err)
	var batch []string
	for _, r := range ptc.CallAll([]ptc.Request{{Tool: "get_budget_by_level", Args: map[string]string{"level": "mid"}}, {Tool: "nope"}}) {
		if r.Err != nil {
			batch = append(batch, errString(r.Err))
		} else {
			batch = append(batch, string(r.Result))
		}
	}
	report["batch"] = batch
	ptc.Log("a log line")
	if err := ptc.Return(report); err != nil {
		ptc.Fail(err)
	}
}

// errString renders an error: a tool error as its JSON, any other as its
// text; "" for none.
func errString(err error) string {
	switch e := err.(type) {
	case nil:
		return ""
	case *ptc.Error:
		b, _ := json.Marshal(e)
		return string(b)
	}
	return err.Error()
}
