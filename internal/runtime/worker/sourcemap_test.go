package worker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/hostprobe"
)

// TestNoFileAccessThroughSourceMaps runs the engine's source-map probes
// (every compile path a script can reach, each naming a map on the host)
// through the pool in both modes. inotify proves that no process opened
// the named file; in worker mode, when strace is available, the worker's
// open calls during the probes are counted too: none may leave /proc/self.
func TestNoFileAccessThroughSourceMaps(t *testing.T) {
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "probe.map")
	if err := os.WriteFile(mapFile, []byte(`{"version":3,"sources":["x.js"],"names":[],"mappings":"AAAA"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Workers run in "/"; in-process executions resolve relative URLs
	// against the test's working directory, so make it "/" too.
	t.Chdir("/")
	urls := []string{mapFile, strings.TrimPrefix(mapFile, "/"), "file://" + mapFile}

	for _, mode := range []Mode{ModeWorker, ModeInProcess} {
		t.Run(mode.String(), func(t *testing.T) {
			w, err := hostprobe.NewWatch(dir)
			if err != nil {
				t.Skipf("inotify unavailable: %v", err)
			}
			defer w.Close()
			p := newPool(t, Config{Mode: mode, Workers: 1})
			run := func(urls ...string) {
				for _, url := range urls {
					for _, probe := range hostprobe.SourceMapProbes(url) {
						job, _ := newJob(t, probe.Source, testLimits())
						out := p.Run(context.Background(), job)
						if out.Err != nil || string(out.Result) != `"ok"` {
							t.Errorf("%s (%s): result %s, error %v", probe.Name, url, out.Result, out.Err)
						}
					}
				}
			}
			// Warm up: the worker starts and loads what it needs first.
			job, _ := newJob(t, `return 1`, testLimits())
			if out := p.Run(context.Background(), job); out.Err != nil {
				t.Fatal(out.Err)
			}

			var trace *openTrace
			if mode == ModeWorker {
				trace = traceOpens(t, workerPIDs(t)...)
			}
			run(urls...)
			if trace != nil {
				checkOpens(t, trace, dir)
			}
			if events, err := w.Events(); err != nil || len(events) > 0 {
				t.Fatalf("files touched: %v (%v)", events, err)
			}
			run("/dev/zero")
			if _, err := os.ReadFile(mapFile); err != nil {
				t.Fatal(err)
			}
			if events, err := w.Events(); err != nil || len(events) == 0 {
				t.Fatalf("the watch saw nothing of a real read (%v)", err)
			}
		})
	}
}

// workerPIDs returns the pids of this process's children: the pool's
// worker processes.
func workerPIDs(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": the comm may hold spaces.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatal("no worker process found")
	}
	return pids
}

// checkOpens stops the trace and fails the test if a worker opened a file a
// script named, or anything but what the worker and the Go runtime read
// for themselves: /proc/self (the memory accounting reads
// /proc/self/status), the cgroup CPU quota (Go refreshes GOMAXPROCS from
// it), under the race detector its own executable, a starting worker's
// time zone and refused lockdown probe, and the huge page sizes that the
// WebAssembly engine's package reads when a worker starts.
func checkOpens(t *testing.T, trace *openTrace, dir string) {
	t.Helper()
	lines := trace.stop(t)
	self, _ := os.Executable()
	var own int
	for _, line := range lines {
		switch {
		case strings.Contains(line, dir), strings.Contains(line, "/dev/zero"), strings.Contains(line, "probe.map"):
			t.Errorf("a worker opened a file a script named: %s", line)
		case strings.Contains(line, `"/proc/self/`), strings.Contains(line, `"/sys/fs/cgroup/`),
			self != "" && strings.Contains(line, `"`+self+`"`),
			// A worker starting up (the pool keeps one idle) loads the
			// time zone before its lockdown, then proves the lockdown
			// with an open of "/" that must be refused. Its connection
			// opens /proc/loadavg before the lockdown too (the spin's
			// host gate, internal/ipc).
			strings.Contains(line, `"/proc/loadavg"`),
			strings.Contains(line, `"/etc/localtime"`), strings.Contains(line, `"/sys/kernel/mm/hugepages/"`),
			strings.Contains(line, `"/", `) && strings.Contains(line, "EPERM"):
			own++
		default:
			t.Errorf("a worker opened a file during the executions: %s", line)
		}
	}
	t.Logf("strace: %d open calls by the workers during the probes, all %d of them the worker's and the Go runtime's own (/proc/self, cgroup, start-up)", len(lines), own)
}
