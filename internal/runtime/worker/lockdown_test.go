package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ptcrun/ptc/internal/core"
)

// lockdownProbeEnv makes the test binary, started by TestLockdownRefusesFiles,
// lock itself down as a worker does and report what each probe got.
const lockdownProbeEnv = "PTC_TEST_LOCKDOWN_PROBE"

// fileProbe is one way of reaching the filesystem; it returns the error it
// got (nil when the filesystem answered).
type fileProbe struct {
	name string
	// landlock: Landlock alone refuses it too (it does not cover stat,
	// readlink, access, chdir, inotify, io_uring set-up or connecting to a
	// named socket; seccomp does).
	landlock bool
	run      func(dir string) error
}

// fileProbes are run after the lockdown, on a thread that ran a script
// (restricted as script threads are) and on a fresh thread.
var fileProbes = []fileProbe{
	{"open existing file", true, func(dir string) error { return closeAfter(os.Open(filepath.Join(dir, "existing"))) }},
	{"open /proc/self/status", true, func(string) error { return closeAfter(os.Open("/proc/self/status")) }},
	{"open directory", true, func(dir string) error { return closeAfter(os.Open(dir)) }},
	{"open /dev/zero", true, func(string) error { return closeAfter(os.Open("/dev/zero")) }},
	{"openat2", true, func(dir string) error {
		fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Join(dir, "existing"), &unix.OpenHow{Flags: unix.O_RDONLY})
		if err == nil {
			_ = unix.Close(fd)
		}
		return err
	}},
	{"creat", true, func(dir string) error {
		fd, err := unix.Creat(filepath.Join(dir, "created"), 0o600)
		if err == nil {
			_ = unix.Close(fd)
		}
		return err
	}},
	{"create file", true, func(dir string) error { return os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o600) }},
	{"stat", false, func(dir string) error { _, err := os.Stat(filepath.Join(dir, "existing")); return err }},
	{"lstat", false, func(dir string) error { _, err := os.Lstat(dir); return err }},
	{"statx", false, func(dir string) error {
		var st unix.Statx_t
		return unix.Statx(unix.AT_FDCWD, dir, 0, unix.STATX_ALL, &st)
	}},
	{"access", false, func(dir string) error { return unix.Access(dir, unix.R_OK) }},
	{"readlink", false, func(string) error { _, err := os.Readlink("/proc/self/exe"); return err }},
	{"mkdir", true, func(dir string) error { return os.Mkdir(filepath.Join(dir, "sub"), 0o700) }},
	{"remove", true, func(dir string) error { return os.Remove(filepath.Join(dir, "existing")) }},
	{"rename", true, func(dir string) error { return os.Rename(filepath.Join(dir, "existing"), filepath.Join(dir, "moved")) }},
	{"symlink", true, func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "link")) }},
	{"chmod", false, func(dir string) error { return os.Chmod(filepath.Join(dir, "existing"), 0o777) }},
	{"truncate", true, func(dir string) error { return os.Truncate(filepath.Join(dir, "existing"), 0) }},
	{"chdir", false, func(dir string) error { return os.Chdir(dir) }},
	{"exec", true, func(string) error { return exec.Command("/bin/true").Run() }},
	{"unix socket", false, func(dir string) error {
		c, err := net.Dial("unix", filepath.Join(dir, "sock"))
		if err == nil {
			_ = c.Close()
		}
		return err
	}},
	{"io_uring", false, func(string) error {
		var params [120]byte
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno != 0 {
			return errno
		}
		_ = unix.Close(int(fd))
		return nil
	}},
	{"inotify", false, func(dir string) error {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.InotifyAddWatch(fd, dir, unix.IN_OPEN)
		return err
	}},
}

func closeAfter(f *os.File, err error) error {
	if err == nil {
		_ = f.Close()
	}
	return err
}

// lockdownReport is what the locked-down helper prints.
type lockdownReport struct {
	Landlock, Scope, LandlockErr string
	Seccomp                      bool
	SeccompErr, ProbeErr         string
	// VMData is what the worker's kept /proc/self/status still reads.
	VMData int64
	// Results maps "thread/probe" to the error ("" when it succeeded).
	Results map[string]string
}

// TestLockdownRefusesFiles locks a process down as a worker does, in a
// child process (a lockdown cannot be undone), and runs every probe there
// on a script thread and on a fresh thread: each must be refused, while
// what the worker itself needs afterwards (its kept status descriptor)
// still works. Each layer is also checked alone.
func TestLockdownRefusesFiles(t *testing.T) {
	if os.Getenv(lockdownProbeEnv) != "" {
		t.Skip("the helper runs in TestLockdownProbeHelper")
	}
	for _, layer := range []string{"both", "seccomp", "landlock"} {
		t.Run(layer, func(t *testing.T) {
			dir := t.TempDir()
			rep := runLockdownHelper(t, dir, layer)
			t.Logf("landlock ABI %s (%s) %s; seccomp %v %s; open of / after the lockdown: %s",
				rep.Landlock, rep.Scope, rep.LandlockErr, rep.Seccomp, rep.SeccompErr, rep.ProbeErr)
			switch {
			case layer != "landlock" && !rep.Seccomp:
				t.Skipf("seccomp is not available here: %s", rep.SeccompErr)
			case layer != "seccomp" && rep.Scope == "":
				t.Skipf("Landlock is not available here: %s", rep.LandlockErr)
			}
			if rep.ProbeErr == "" {
				t.Error("the open of / after the lockdown succeeded")
			}
			if rep.VMData <= 0 {
				t.Error("the kept /proc/self/status no longer reads VmData after the lockdown")
			}
			for _, thread := range []string{"script", "fresh"} {
				for _, p := range fileProbes {
					key := thread + "/" + p.name
					if layer == "landlock" && (!p.landlock || thread == "fresh" && rep.Scope != scopeAllThreads) {
						continue // not Landlock's to refuse
					}
					got, ok := rep.Results[key]
					switch {
					case !ok:
						t.Errorf("%s: not run", key)
					case got == "":
						t.Errorf("%s: the filesystem answered after the lockdown", key)
					case !strings.Contains(got, "operation not permitted") && !strings.Contains(got, "permission denied"):
						t.Errorf("%s: refused with %q, want EPERM (seccomp) or EACCES (Landlock)", key, got)
					}
				}
			}
			if layer == "landlock" && rep.Scope != scopeAllThreads {
				return // the fresh thread was free to change the host
			}
			if b, err := os.ReadFile(filepath.Join(dir, "existing")); err != nil || string(b) != "secret" {
				t.Errorf("the probes changed the host's file: %q, %v", b, err)
			}
			for _, name := range []string{"new", "created", "sub", "moved", "link"} {
				if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
					t.Errorf("a probe created %s on the host", name)
				}
			}
		})
	}
}

// runLockdownHelper prepares dir (a file, a listening socket), runs the
// helper with one layer and returns its report.
func runLockdownHelper(t *testing.T, dir, layer string) lockdownReport {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "existing"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The accepting goroutine ends when ln closes.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockdownProbeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockdownProbeEnv+"="+layer+":"+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var rep lockdownReport
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "REPORT ") {
			line = strings.TrimPrefix(l, "REPORT ")
		}
	}
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	return rep
}

// TestLockdownProbeHelper is the locked-down side of
// TestLockdownRefusesFiles; it runs only in the helper process.
func TestLockdownProbeHelper(t *testing.T) {
	layer, dir, ok := strings.Cut(os.Getenv(lockdownProbeEnv), ":")
	if !ok {
		t.Skip("runs only as TestLockdownRefusesFiles's helper")
	}
	status := openProcStatus()
	l := lockDownWith(layer != "seccomp", layer != "landlock")
	rep := lockdownReport{Landlock: strconv.Itoa(l.landlockABI), Scope: l.landlockScope, LandlockErr: l.landlockErr,
		Seccomp: l.seccomp, SeccompErr: l.seccompErr, ProbeErr: l.probeErr, Results: map[string]string{}}
	rep.VMData = status.vmData()
	var mu sync.Mutex
	run := func(thread string, setup func()) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			// The thread ends with the goroutine (still locked): it is
			// never reused for anything else.
			if setup != nil {
				setup()
			}
			for _, p := range fileProbes {
				msg := ""
				if err := p.run(dir); err != nil {
					msg = err.Error()
					var errno syscall.Errno
					if errors.As(err, &errno) {
						msg = errno.Error()
					}
				}
				mu.Lock()
				rep.Results[thread+"/"+p.name] = msg
				mu.Unlock()
			}
		}()
		wg.Wait()
	}
	run("script", l.restrictThread)
	run("fresh", nil)
	b, _ := json.Marshal(rep)
	fmt.Println("REPORT " + string(b))
}

// TestWorkerLockedDown checks what a real worker reports, and counts with
// strace (when present) the open calls of the worker while it runs
// JavaScript and TypeScript executions — console output, dates, compile
// paths, and source that names a source map on the host (which goja would
// read if the engine let it) included: none may succeed.
func TestWorkerLockedDown(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	f := p.Facts()
	if !f.Seccomp && f.LandlockScope == "" {
		t.Skipf("no lockdown on this host: seccomp %s; landlock %s", f.SeccompError, f.LandlockError)
	}
	if f.OpenProbeError == "" {
		t.Fatal("the worker reports that it could open / after its lockdown")
	}
	job, _ := newJob(t, `return 1`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	mapFile := filepath.Join(t.TempDir(), "probe.map")
	if err := os.WriteFile(mapFile, []byte(`{"version":3,"sources":["x.js"],"names":[],"mappings":"AAAA"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pid := idlePID(t, p)
	tr := traceOpens(t, pid)
	if tr == nil {
		return
	}
	for _, c := range []struct {
		lang core.Language
		src  string
	}{
		{core.LanguageJavaScript, `console.log("x", {a: 1}); return new Date().toString().length > 0`},
		{core.LanguageJavaScript, `return [eval("1 + 1"), Function("return 2")(), JSON.parse("[1]")[0]]`},
		{core.LanguageJavaScript, `try { null.x } catch (e) { return String(e.stack).length > 0 }`},
		{core.LanguageTypeScript, `const n: number = 2; return n * 2`},
		{core.LanguageJavaScript, `try { return eval(` + strconv.Quote("1\n//# sourceMappingURL="+mapFile) + `) } catch (e) { return e.name }`},
		{core.LanguageJavaScript, `try { return Function(` + strconv.Quote("return 1\n//# sourceMappingURL="+mapFile) + `)() } catch (e) { return e.name }`},
	} {
		job, _ := newJob(t, c.src, testLimits())
		job.Language = c.lang
		if out := p.Run(context.Background(), job); out.Err != nil {
			t.Errorf("%s: %v", c.src, out.Err)
		}
	}
	opens := tr.stop(t)
	refused := 0
	for _, o := range opens {
		if strings.Contains(o, "= -1 EPERM") || strings.Contains(o, "= -1 EACCES") {
			refused++
			continue
		}
		t.Errorf("the worker opened a file during an execution: %s", o)
	}
	t.Logf("strace: %d open calls by the worker during the executions, %d of them refused", len(opens), refused)
}

// idlePID returns the pid of the pool's only worker.
func idlePID(t *testing.T, p *Pool) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.procs {
		return w.pid
	}
	t.Fatal("no worker")
	return 0
}

// openTrace is strace attached to processes, tracing their open calls.
type openTrace struct {
	cmd *exec.Cmd
	out string
}

// traceOpens attaches strace to pids and returns once it traces; nil (and
// a log line) when strace is missing or may not attach.
func traceOpens(t *testing.T, pids ...int) *openTrace {
	t.Helper()
	path, err := exec.LookPath("strace")
	if err != nil {
		t.Log("strace not found: open calls not counted")
		return nil
	}
	out := filepath.Join(t.TempDir(), "opens")
	// -ff writes each thread's calls to a file of its own (out.TID), so
	// no call is split into "unfinished" and "resumed" halves when two
	// threads make calls at once: each line holds the path and the result.
	args := []string{"-ff", "-e", "trace=open,openat,openat2,creat,open_by_handle_at", "-o", out}
	for _, pid := range pids {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	cmd := exec.Command(path, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Logf("strace: %v: open calls not counted", err)
		return nil
	}
	// strace reports each attached thread on stderr; the first report
	// means tracing has begun.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "attached") {
			// Drain strace's further reports; the goroutine ends when
			// strace exits (stop).
			go func() {
				for sc.Scan() {
				}
			}()
			return &openTrace{cmd: cmd, out: out}
		}
		if strings.Contains(line, "Operation not permitted") || strings.Contains(line, "attach:") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Logf("strace cannot attach (%s): open calls not counted", line)
			return nil
		}
	}
	_ = cmd.Wait()
	t.Log("strace ended before attaching: open calls not counted")
	return nil
}

// stop ends the trace and returns the open calls it saw.
func (o *openTrace) stop(t *testing.T) []string {
	t.Helper()
	_ = o.cmd.Process.Signal(syscall.SIGINT)
	_ = o.cmd.Wait()
	files, err := filepath.Glob(o.out + ".*")
	if err != nil {
		t.Fatal(err)
	}
	var opens []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "open") && strings.Contains(line, "(") {
				opens = append(opens, line)
			}
		}
	}
	return opens
}
