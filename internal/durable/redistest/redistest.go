// Package redistest starts a real Redis server for tests of the shared
// state store. Tests skip without redis-server outside CI, and name
// themselves in the package's skip report (testenv.SkipReport); in CI
// (CI=true, where .ci/run installs it) its absence fails them.
package redistest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/testenv"
)

// Start returns the URL of a Redis server for t: PTC_TEST_REDIS_URL when
// set, else a redis-server started in a temporary directory on a free
// loopback port and stopped when t ends.
func Start(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("PTC_TEST_REDIS_URL"); u != "" {
		return u
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server is not on PATH", "install it (apt-get install redis-server; .ci/run does) or set PTC_TEST_REDIS_URL")
		return ""
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The server is stopped when the test ends; Wait reaps it.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Ready when it says so; its log goes to the test's log.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "Ready to accept connections") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("redis-server exited before it was ready")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("redis-server did not get ready within 30s")
	}
	return "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
}
