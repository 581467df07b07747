package adversarial

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Watching every file access of ptcd and its workers with strace: no
// script may make the server touch the filesystem. What a process does
// when it starts (a worker the pool replaces meanwhile) and ptc's own
// reads of /proc and the cgroup files are not the script's doing.

// startupPaths are opened by processes starting up or by ptc's own
// bookkeeping (the Go runtime re-reads the CPUs it may use; the metrics'
// process collector reads the boot time from /proc/stat when it is
// gathered; each worker connection reads the host's load for its spin,
// /proc/loadavg, opened when the connection is made), never at a
// script's request.
var startupPaths = regexp.MustCompile(`^(/etc/ld\.so\.|/lib|/usr/lib|/sys/kernel/mm/|/sys/fs/cgroup/|/sys/devices/system/cpu/|/proc/self/|/proc/thread-self/|/proc/[0-9]+/|/proc$|/proc/stat$|/proc/loadavg$|/dev/null$|/etc/localtime$|/dev/urandom$)`)

// fileCall matches a traced file syscall and its path argument.
var fileCall = regexp.MustCompile(`^\s*(\d+)\s+([a-z0-9_]+)\((?:AT_FDCWD|-?\d+)?,?\s*"([^"]*)"`)

// traceFiles runs scripts while strace watches ptcd (and, in worker mode,
// its workers) and returns the file accesses that are not start-up ones.
// It reports skip when strace is missing or not permitted here.
func traceFiles(ctx context.Context, e *env, scripts []*ptcv1.ExecuteRequest) (accesses []string, skip string) {
	straceBin, err := exec.LookPath("strace")
	if err != nil {
		return nil, "strace is not installed"
	}
	pids := append([]int{e.srv.pid()}, childrenOf(e.srv.pid())...)
	out := filepath.Join(e.dir, fmt.Sprintf("strace-%d.out", time.Now().UnixNano()))
	args := []string{"-f", "-qq", "-e", "trace=%file", "-e", "signal=none", "-o", out}
	for _, p := range pids {
		args = append(args, "-p", fmt.Sprint(p))
	}
	cmd := exec.Command(straceBin, args...)
	if err := cmd.Start(); err != nil {
		return nil, "strace: " + err.Error()
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}
	// Attached once every process names a tracer.
	attached := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !attached; time.Sleep(20 * time.Millisecond) {
		attached = true
		for _, p := range pids {
			if tracerOf(p) == 0 {
				attached = false
			}
		}
	}
	if !attached {
		stop()
		return nil, "strace could not attach (ptrace not permitted here?)"
	}
	for _, r := range scripts {
		if _, err := e.c.Execute(ctx, r); err != nil {
			e.fail("traced execution: %v", describe(nil, err))
		}
	}
	stop()
	f, err := os.Open(out)
	if err != nil {
		e.fail("strace output: %v", err)
		return nil, ""
	}
	defer f.Close()
	started := map[string]bool{} // threads that exec'd: new workers starting
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := fileCall.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		tid, call, path := m[1], m[2], m[3]
		switch {
		case call == "execve":
			started[tid] = true
		case started[tid], startupPaths.MatchString(path), path == ptcdBinary, path == "" || path == "/":
		default:
			accesses = append(accesses, call+" "+path)
		}
	}
	return accesses, ""
}

// tracerOf returns the TracerPid of a process (0: not traced).
func tracerOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var t int
		if _, err := fmt.Sscanf(line, "TracerPid:\t%d", &t); err == nil {
			return t
		}
	}
	return 0
}

// fileAccessCase runs scripts under strace and expects no file access.
func fileAccessCase(name string, fast bool, scripts []*ptcv1.ExecuteRequest) tcase {
	return tcase{
		name: name, family: famEscape, fast: fast, bound: 60 * time.Second, want: checkedByDo,
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			accesses, skip := traceFiles(ctx, e, scripts)
			if skip != "" {
				e.skip(skip)
				return nil, nil
			}
			if len(accesses) > 0 {
				e.fail("HOST ACCESS: scripts made the server touch the filesystem: %s", clip(strings.Join(accesses, "; "), 1500))
			}
			return nil, nil
		},
	}
}

func fileAccessCases() []tcase {
	ordinary := []*ptcv1.ExecuteRequest{
		jsReq(`return [new Date().toString(), new Date().toLocaleString(), new Date(0).getTimezoneOffset(), Date.parse("2024-03-10T02:30:00"), new Date(2024, 0, 1).toLocaleDateString()]`),
		jsReq(`return ["é".normalize("NFD").length, "a".localeCompare("b"), /\p{Lu}/u.test("É"), "ß".toUpperCase(), (12345.678).toLocaleString(), (1e21).toFixed(2)]`),
		jsReq(`const e = new Error("x"); return [e.stack, (() => { try { null.x } catch (err) { return err.stack } })()]`),
		jsReq(`return [eval("1 + 1"), new Function("a", "return a * 2")(21), (0, eval)("typeof globalThis")]`),
		jsReq(`await Promise.all([tools.get_team_members({department: "support"}), tools.get_budget_by_level({level: "staff"})]); console.log("x"); return 1`),
		jsReq(`try { await import("fs") } catch (e) {} try { require("fs") } catch (e) {} return 1`),
		jsReq("throw new Error('at the top')\n//# sourceMappingURL=/etc/hostname"),
		tsReq("const f = (n: number): number => { if (n < 0) throw new RangeError('neg'); return n };\nreturn f(-1)"),
		tsReq("return 1\n//# sourceMappingURL=/etc/hostname"),
		wasmReq(wasmPrint(`{"ok":1}`)),
		wasmReq(wasmCallAndPrint("get_budget_by_level", `{"level":"mid"}`)),
	}
	var maps []*ptcv1.ExecuteRequest
	for _, f := range sourceMapForms {
		for _, p := range []string{"/etc/hostname", "etc/hostname", "/nonexistent/x.map"} {
			src := "try { " + strings.ReplaceAll(strings.TrimPrefix(f.src, "return "), "PATH", p) + " } catch (e) {} return 1"
			if f.ts || strings.HasPrefix(f.src, "return 1\n") {
				continue // the top level is covered above
			}
			maps = append(maps, jsReq(src))
		}
	}
	return []tcase{
		fileAccessCase("no-file-access-ordinary-scripts", true, ordinary),
		fileAccessCase("no-file-access-source-maps", false, maps),
	}
}
