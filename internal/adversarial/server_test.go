package adversarial

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// ptcdBinary is the ptcd built once per test binary (TestMain).
var ptcdBinary string

// safetyDataLimit is the RLIMIT_DATA ptcd runs under: not part of what is
// tested, a guard so that a server that loses control of its memory dies
// (and is reported) instead of taking a shared machine down. Worker
// processes set their own limits (4.5 GiB) below it; WebAssembly runs in
// ptcd in both modes and may hold 2 GiB (the ceiling) plus a copy.
func safetyDataLimit(mode) uint64 { return 8 << 30 }

// buildPtcd builds cmd/ptcd into dir and returns the binary's path.
func buildPtcd(dir string) (string, error) {
	out := filepath.Join(dir, "ptcd")
	cmd := exec.Command("go", "build", "-o", out, "github.com/ptcrun/ptc/cmd/ptcd")
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/ptcd: %v\n%s", err, b)
	}
	return out, nil
}

// server is one ptcd process under test, restarted when it dies or hangs.
type server struct {
	mode mode
	dir  string // working directory of ptcd (holds relative-path probes)
	cfg  string // configuration file

	log *logTail // standard error of every process, one after the other

	mu       sync.Mutex // guards the fields below, replaced by a restart
	p        *proc
	startLog string // what the process logged until it listened
	conn     *grpc.ClientConn
	client   ptcv1.RunnerServiceClient
}

// proc is one ptcd process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	exit error         // the exit status; set before done is closed
}

// newServer starts ptcd in mode m with testdata/<m>.yaml. It is stopped
// when t ends.
func newServer(t testing.TB, m mode) *server {
	t.Helper()
	cfg, err := filepath.Abs(filepath.Join("testdata", m.String()+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{mode: m, dir: t.TempDir(), cfg: cfg, log: newLogTail(4 << 20)}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// start starts a process and waits until it listens.
func (s *server) start() error {
	cmd := exec.Command(ptcdBinary, "--config", s.cfg)
	cmd.Dir = s.dir
	// Only what ptcd needs: no caller secrets leak into the tested server.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir, "TMPDIR=" + s.dir}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	mark := s.log.mark()
	if err := cmd.Start(); err != nil {
		return err
	}
	lim := unix.Rlimit{Cur: safetyDataLimit(s.mode), Max: safetyDataLimit(s.mode)}
	_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_DATA, &lim, nil)
	p := &proc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	// The reader owns stderr until EOF (the process exited); it then reaps
	// the process and closes done.
	go func() {
		s.log.consume(stderr, ready)
		p.exit = cmd.Wait()
		close(p.done)
	}()
	var addr string
	select {
	case addr = <-ready:
	case <-p.done:
		return fmt.Errorf("ptcd (%s) exited at start-up (%v): %s", s.mode, p.exit, s.log.since(mark))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("ptcd (%s) did not listen within 30s: %s", s.mode, s.log.since(mark))
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		_ = cmd.Process.Kill()
		<-p.done
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p, s.conn, s.client = p, conn, ptcv1.NewRunnerServiceClient(conn)
	s.startLog = s.log.since(mark)
	return nil
}

// rpc returns the current client.
func (s *server) rpc() ptcv1.RunnerServiceClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// connection returns the current client connection.
func (s *server) connection() *grpc.ClientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// process returns the current process.
func (s *server) process() *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// pid returns the current process id.
func (s *server) pid() int { return s.process().cmd.Process.Pid }

// exited reports whether the process has exited, and how.
func (s *server) exited() (bool, error) {
	p := s.process()
	select {
	case <-p.done:
		return true, p.exit
	default:
		return false, nil
	}
}

// stop ends the process (SIGTERM, then SIGKILL) and closes the client.
func (s *server) stop() {
	s.mu.Lock()
	p, conn := s.p, s.conn
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
	if p == nil {
		return
	}
	workers := childrenOf(p.cmd.Process.Pid)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	// Workers leave with their supervisor (their socket reaches EOF); a
	// straggler is killed by its process group (each worker leads one).
	for _, w := range workers {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", w)); err == nil && exe == ptcdBinary {
			_ = syscall.Kill(-w, syscall.SIGKILL)
		}
	}
}

// restart replaces the process after a crash or a hang.
func (s *server) restart() error {
	s.stop()
	return s.start()
}

// logTail keeps the last bytes of ptcd's standard error.
type logTail struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64 // bytes ever written
}

func newLogTail(max int) *logTail { return &logTail{max: max} }

// consume reads r line by line until EOF, sending the listen address
// from the "ptcd listening" record to ready.
func (l *logTail) consume(r io.Reader, ready chan<- string) {
	br := bufio.NewReaderSize(r, 64<<10)
	sent := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !sent && strings.Contains(string(line), `"ptcd listening"`) {
				var rec struct{ Addr string }
				if json.Unmarshal(line, &rec) == nil && rec.Addr != "" {
					ready <- rec.Addr
					sent = true
				}
			}
			l.write(line)
		}
		if err != nil {
			return
		}
	}
}

func (l *logTail) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(p))
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
}

// mark returns a position for since.
func (l *logTail) mark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// since returns what was logged after mark (as much as is kept).
func (l *logTail) since(mark int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.total - mark
	if n > int64(len(l.buf)) {
		n = int64(len(l.buf))
	}
	return string(l.buf[int64(len(l.buf))-n:])
}

// outcomeOf returns the outcome ptcd logged for an execution id after
// mark ("ok" or an error kind), waiting up to 5s for the record.
func (s *server) outcomeOf(mark int64, id string) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(s.log.since(mark), "\n") {
			if !strings.Contains(line, id) {
				continue
			}
			var rec struct {
				ExecutionID string `json:"execution_id"`
				Outcome     string `json:"outcome"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.ExecutionID == id && rec.Outcome != "" {
				return rec.Outcome, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("ptcd logged no outcome for execution %s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive checks that the server still serves: the process runs and a
// trivial execution succeeds within 15s. A dead or hung server is
// restarted; the returned error says what happened, with what the server
// logged after mark.
func (s *server) alive(mark int64) error {
	dead, exit := s.exited()
	if !dead {
		err := trivial(s.rpc(), 15*time.Second)
		if err == nil {
			return nil
		}
		if dead, exit = s.exited(); !dead {
			return s.replace(mark, "SERVER HUNG (alive, but a trivial execution failed: "+err.Error()+")")
		}
	}
	return s.replace(mark, fmt.Sprintf("SERVER CRASHED (%v)", exit))
}

// replace restarts the server after what went wrong and describes it.
func (s *server) replace(mark int64, what string) error {
	tail := crashSummary(s.log.since(mark))
	if err := s.restart(); err != nil {
		return fmt.Errorf("%s and could not be restarted: %v; its log:\n%s", what, err, tail)
	}
	return fmt.Errorf("%s; restarted; its log:\n%s", what, tail)
}

// trivial runs `return 1 + 1` and expects 2.
func trivial(c ptcv1.RunnerServiceClient, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := c.Execute(ctx, jsReq("return 1 + 1"))
	if err != nil {
		return err
	}
	if res.GetError() != nil || res.GetResultJson() != "2" {
		return fmt.Errorf("trivial execution answered %s", brief(res))
	}
	return nil
}

// crashSummary picks from a log what says why a process died: the lines
// around Go's "fatal error:" or "panic:" and the first goroutine's stack
// head, else the last lines.
func crashSummary(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime: ") {
			end := min(i+16, len(lines))
			return strings.Join(lines[i:end], "\n")
		}
	}
	return strings.Join(lines[max(0, len(lines)-12):], "\n")
}

// rssOf returns VmRSS of a process in bytes.
func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			_, err := fmt.Sscan(f[1], &kb)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// childrenOf lists the processes whose parent is pid (ptcd's workers).
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		var child int
		if _, err := fmt.Sscan(e.Name(), &child); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscan(s[i+1:], &state, &ppid); err == nil && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// workerRSS returns the number of ptcd's worker processes and their
// summed RSS.
func (s *server) workerRSS() (n int, total int64) {
	for _, w := range childrenOf(s.pid()) {
		if r, err := rssOf(w); err == nil {
			n++
			total += r
		}
	}
	return n, total
}

// rssSampler records the highest RSS of a process until stopped.
type rssSampler struct {
	stopc chan struct{}
	done  chan struct{}
	peak  int64
}

// sampleRSS starts sampling pid's RSS every 20ms; stop returns the peak.
func sampleRSS(pid int) *rssSampler {
	r := &rssSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	r.peak, _ = rssOf(pid)
	// The goroutine ends when stop closes stopc.
	go func() {
		defer close(r.done)
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-r.stopc:
				return
			case <-tk.C:
				if v, err := rssOf(pid); err == nil && v > r.peak {
					r.peak = v
				}
			}
		}
	}()
	return r
}

func (r *rssSampler) stop() int64 {
	close(r.stopc)
	<-r.done
	return r.peak
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
