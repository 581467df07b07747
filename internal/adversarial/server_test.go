package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
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
	bin  string // the ptcd binary; empty for ptcdBinary

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
	bin := s.bin
	if bin == "" {
		bin = ptcdBinary
	}
	cmd := exec.Command(bin, "--config", s.cfg)
	cmd.Dir = s.dir
	// Only what ptcd needs: no caller secrets leak into the tested server.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir, "TMPDIR=" + s.dir}
	if p := pythonInterpreterPath(); p != "" {
		cmd.Env = append(cmd.Env, "PTC_PYTHON_INTERPRETER="+p)
	}
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
	p := s.process()
	select {
	case <-p.done:
		return s.replace(mark, fmt.Sprintf("SERVER CRASHED (%v)", p.exit))
	default:
	}
	err := trivial(s.rpc(), 15*time.Second)
	if err == nil {
		return nil
	}
	// A server that is dying refuses connections before it is reaped.
	select {
	case <-p.done:
		return s.replace(mark, fmt.Sprintf("SERVER CRASHED (%v)", p.exit))
	case <-time.After(3 * time.Second):
		return s.replace(mark, "SERVER HUNG (alive, but a trivial execution failed: "+err.Error()+")")
	}
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
