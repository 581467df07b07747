// Package forgetfultest is a fixture of the root package's tests: a test
// that starts worker processes in a test binary whose TestMain does not
// call ptc.RunWorker (it has none). Each worker runs the test binary
// again instead of the worker; it must exit at once, with a message,
// instead of starting workers.
package forgetfultest

import (
	"context"
	"testing"

	"github.com/ptcrun/ptc"
)

func TestStartsWorkers(t *testing.T) {
	r, err := ptc.NewRunner(ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Execute(context.Background(), ptc.Request{Source: "return 1 + 1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(string(res.Result))
}
