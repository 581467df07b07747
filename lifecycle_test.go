package ptc_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestForgottenRunWorker runs programs that start worker processes
// without calling ptc.RunWorker first (a main, a test binary without
// TestMain): each worker then runs the program again instead of the
// worker. It must exit at once with a message that says what to fix,
// never start workers itself (no process of the program is ever the child
// of one of its workers), and leave no process behind once the program
// ends.
func TestForgottenRunWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs and starts worker processes")
	}
	for _, tc := range []struct {
		name  string
		build []string // go arguments that build the fixture to -o bin
		args  []string
	}{
		{"main", []string{"build", "-o", "BIN", "./testdata/forgetful"}, nil},
		{"test binary", []string{"test", "-c", "-o", "BIN", "./testdata/forgetfultest"}, []string{"-test.run=^TestStartsWorkers$", "-test.count=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "forgetful")
			build := make([]string, len(tc.build))
			for i, a := range tc.build {
				build[i] = strings.ReplaceAll(a, "BIN", bin)
			}
			if out, err := exec.Command("go", build...).CombinedOutput(); err != nil {
				t.Fatalf("go %s: %v\n%s", strings.Join(build, " "), err, out)
			}
			// Whatever happens, nothing of the program outlives the test.
			t.Cleanup(func() {
				for _, pid := range processesOf(bin) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The watcher samples the program's processes until it exits:
			// a process of the program whose parent is not the program
			// itself was started by a worker.
			exited := make(chan struct{})
			seen := make(chan []string, 1)
			go func() {
				var bad []string
				known := map[int]bool{}
				for {
					for _, pid := range processesOf(bin) {
						if pid == cmd.Process.Pid || known[pid] {
							continue
						}
						if ppid := parentOf(pid); ppid != cmd.Process.Pid && ppid > 0 {
							known[pid] = true
							bad = append(bad, fmt.Sprintf("%d (child of %d)", pid, ppid))
						}
					}
					select {
					case <-exited:
						seen <- bad
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			err := cmd.Wait()
			close(exited)
			if bad := <-seen; len(bad) > 0 {
				t.Errorf("workers started %d workers: %s", len(bad), strings.Join(bad[:min(len(bad), 10)], ", "))
			}
			if err == nil {
				t.Fatalf("the program succeeded without hosting its workers:\n%s", out.String())
			}
			for _, want := range []string{"started as a ptc worker", "ptc.RunWorker()"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the program's output does not say %q:\n%s", want, out.String())
				}
			}
			// The program waited for its worker's exit (the handshake
			// failed on it), so nothing of it should be running now; the
			// deadline allows for the kernel's reaping only.
			deadline := time.Now().Add(5 * time.Second)
			for left := processesOf(bin); len(left) > 0; left = processesOf(bin) {
				if time.Now().After(deadline) {
					t.Fatalf("processes of the program still run after it exited: %v", left)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// processesOf lists the live processes running executable bin (zombies,
// whose executable cannot be read, excluded).
func processesOf(bin string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && exe == bin {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf returns the parent of pid, 0 when it is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
