// Command forgetful embeds ptc with worker processes but does not call
// ptc.RunWorker first thing in main: a fixture of the root package's
// tests. Each worker it starts runs this main again instead of the worker;
// it must exit at once, with a message, instead of starting workers.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ptcrun/ptc"
)

func main() {
	r, err := ptc.NewRunner(ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "forgetful:", err)
		os.Exit(1)
	}
	defer r.Close()
	res, err := r.Execute(context.Background(), ptc.Request{Source: "return 1 + 1"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "forgetful:", err)
		os.Exit(1)
	}
	fmt.Println(string(res.Result))
}
