package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
)

// spinWASM is a WebAssembly guest that computes forever: its _start is
// one loop, which a worker cannot interrupt.
var spinWASM = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
	0x03, 0x02, 0x01, 0x00, // one function of that type
	0x05, 0x03, 0x01, 0x00, 0x01, // one memory of one page
	0x07, 0x13, 0x02, // exports: memory, _start
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0 end
}

// TestWorkersDieWithPtcd kills ptcd with SIGKILL, which gives it no
// chance to stop its workers, while one of them runs a guest that
// computes forever: a worker whose pipe closes ends once its executions
// do, and that one never would. The workers die with ptcd, by their
// parent-death signal, within a second.
func TestWorkersDieWithPtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ptcd with worker processes")
	}
	cfg := filepath.Join(t.TempDir(), "ptcd.yaml")
	if err := os.WriteFile(cfg, []byte("workers:\n  mode: worker\n  idle: 2\nlogging:\n  format: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ptcdBin, "--config", cfg, "--listen", "127.0.0.1:0", "--metrics-listen", "")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var workers []int
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for _, w := range workers {
			_ = syscall.Kill(w, syscall.SIGKILL)
		}
	})
	// The reader drains ptcd's log until it exits; listening says that
	// ptcd started its warm workers (it starts them before it listens).
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if !sent && json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "ptcd listening" {
				listening <- rec.Addr
				sent = true
			}
		}
		if !sent {
			listening <- ""
		}
	}()
	addr := <-listening
	if addr == "" {
		t.Fatal("ptcd exited before it listened")
	}
	deadline := time.Now().Add(60 * time.Second)
	for workers = childPids(cmd.Process.Pid); len(workers) < 2; workers = childPids(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("ptcd has %d workers after 60s, want its 2 idle ones", len(workers))
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := dialClient(t, addr)
	// The execution ends with ptcd (its RPC fails); its limits are far
	// beyond the test, so that ptcd does not end it first.
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_, _ = c.Execute(context.Background(), ptc.Request{Language: ptc.LanguageWASM, Module: spinWASM,
			Limits: ptc.Limits{Timeout: 10 * time.Minute, CPUTime: 10 * time.Minute}})
	}()
	busy := 0
	start := map[int]int64{}
	for busy == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no worker computes the guest after 60s")
		}
		for _, w := range childPids(cmd.Process.Pid) {
			if _, ok := start[w]; !ok {
				start[w] = cpuTicks(w)
			} else if cpuTicks(w)-start[w] >= 10 {
				busy = w
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	workers = childPids(cmd.Process.Pid)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for {
		var alive []int
		for _, w := range workers {
			if running(w) {
				alive = append(alive, w)
			}
		}
		if len(alive) == 0 {
			t.Logf("%d workers, one of them computing, gone %v after ptcd", len(workers), time.Since(killed))
			<-ran
			return
		}
		if time.Since(killed) > time.Second {
			t.Fatalf("workers %v still run a second after ptcd was killed", alive)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// childPids lists the processes whose parent is pid.
func childPids(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// cpuTicks returns the user and system CPU time of pid in clock ticks.
func cpuTicks(pid int) int64 {
	f := statFields(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// statFields returns the fields of /proc/<pid>/stat after the command
// name (state, ppid, ...); nil when the process is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}
