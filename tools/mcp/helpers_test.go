package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(testenv.SkipReport(m)) }

// everythingBin returns the path of mcp-server-everything installed by
// `npm ci` (see testenv.NodeBin: a skip without it, a failure in CI).
func everythingBin(t *testing.T) string {
	t.Helper()
	return testenv.NodeBin(t, "mcp-server-everything")
}

// changes returns a channel that receives after every OnChange of s.
func changes(s *Source) <-chan struct{} {
	ch := make(chan struct{}, 64)
	s.OnChange(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch
}

// waitFor waits on ch until cond holds or the deadline passes.
func waitFor(t *testing.T, ch <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func toolNames(ts []tools.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func find(t *testing.T, s *Source, name string) tools.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("tool %s not found in %v", name, toolNames(s.Tools()))
	return tools.Tool{}
}

func toolErrCode(err error) string {
	var te *tools.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

// httpEverything runs mcp-server-everything's streamable HTTP transport on
// a free loopback port and returns its /mcp URL once it listens. The
// server is stopped at the end of the test; stop stops it earlier.
func httpEverything(t *testing.T, bin string, port int) (url string, stop func()) {
	t.Helper()
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	// This goroutine reads the server's stderr until the process exits.
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.Contains(line, "listening on port") {
				ready <- nil
				sent = true
			}
			if !sent && strings.Contains(line, "Failed to start") {
				ready <- errors.New(line)
				sent = true
			}
		}
		if !sent {
			ready <- errors.New("server exited before listening")
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("mcp-server-everything streamableHttp: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mcp-server-everything streamableHttp did not start listening")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), stop
}

func startSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 50 * time.Millisecond
	}
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
