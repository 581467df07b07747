// Package pgtest starts a real PostgreSQL server for tests of the shared
// state store: a throwaway cluster (initdb) in a temporary directory,
// listening on a Unix socket only. Tests skip without the PostgreSQL
// server binaries outside CI, and name themselves in the package's skip
// report (testenv.SkipReport); in CI (CI=true, where .ci/run installs
// Debian's postgresql) their absence fails them.
//
// PostgreSQL refuses to run as root: when the tests do (as CI does), the
// cluster is made and run as the user nobody, in a directory that user
// owns.
package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ptcrun/ptc/internal/testenv"
)

// runAs is the user a root test process runs the cluster as.
const runAs = "nobody"

// Start returns the DSN of a PostgreSQL server for t: PTC_TEST_POSTGRES_DSN
// when set (in key=value form), else a cluster made in a temporary
// directory, listening on a Unix socket there, and stopped and removed
// when t ends. The DSN names a superuser (trust authentication) and the
// database postgres; NewDatabase makes a database of its own for each
// test.
func Start(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv("PTC_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	bin := findBin(t)
	if bin == "" {
		return ""
	}
	dsn, stop, err := start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return dsn
}

// shared is the server Shared starts once per test binary.
var shared struct {
	sync.Mutex
	dsn  string
	stop func()
}

// Shared is Start for a server shared by the tests of one test binary
// (initdb takes seconds): started by the first test that asks, stopped by
// Stop, which the package's TestMain calls after its tests (see
// testenv.Then).
func Shared(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv("PTC_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	shared.Lock()
	defer shared.Unlock()
	if shared.dsn != "" {
		return shared.dsn
	}
	bin := findBin(t)
	if bin == "" {
		return ""
	}
	dsn, stop, err := start(bin)
	if err != nil {
		t.Fatal(err)
	}
	shared.dsn, shared.stop = dsn, stop
	return dsn
}

// Stop stops the server Shared started, if it did.
func Stop() {
	shared.Lock()
	defer shared.Unlock()
	if shared.stop != nil {
		shared.stop()
		shared.dsn, shared.stop = "", nil
	}
}

// findBin returns the server binaries' directory, or "" when t was
// skipped (or failed, in CI) for want of them.
func findBin(t testing.TB) string {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		testenv.Missing(t, err.Error(), "install it (apt-get install postgresql; .ci/run does), put its bin directory on PATH, or set PTC_TEST_POSTGRES_DSN")
		return ""
	}
	return bin
}

// start makes a cluster with the binaries in bin and starts its server;
// stop stops it and removes the cluster.
func start(bin string) (dsn string, stop func(), err error) {
	// The directory is made here, not by t.TempDir: under root the
	// cluster runs as another user, who must own the directory and be
	// able to reach it (t.TempDir's parent is private to root).
	dir, err := os.MkdirTemp("", "ptc-pg-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "s")
	if err := os.Mkdir(sock, 0o700); err != nil {
		cleanup()
		return "", nil, err
	}
	command, err := dropRoot(dir, sock)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	initdb := command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "ptc", "-N", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// No TCP listener (listen_addresses=''): the socket in sock is the
	// only way in. Durability is not what these tests measure.
	cmd := command(filepath.Join(bin, "postgres"), "-D", data, "-k", sock, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=100")
	cmd.Dir = dir
	out, err := cmd.StderrPipe()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		cleanup()
		return "", nil, err
	}
	// stop ends the server (SIGQUIT: an immediate shutdown; the cluster
	// is thrown away); Wait reaps it, and the reader below ends at the
	// end of its output.
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		_ = cmd.Wait()
		cleanup()
	}
	ready := make(chan bool, 1)
	var log atomic.Value
	log.Store("")
	go func() {
		sc := bufio.NewScanner(out)
		said, text := false, ""
		for sc.Scan() {
			if len(text) < 8<<10 {
				text += sc.Text() + "\n"
				log.Store(text)
			}
			if !said && strings.Contains(sc.Text(), "database system is ready to accept connections") {
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
			stop()
			return "", nil, fmt.Errorf("postgres exited before it was ready:\n%s", log.Load())
		}
	case <-time.After(60 * time.Second):
		stop()
		return "", nil, fmt.Errorf("postgres did not get ready within 60s:\n%s", log.Load())
	}
	return "host=" + sock + " user=ptc dbname=postgres sslmode=disable", stop, nil
}

// NewDatabase makes a database of its own on the server of dsn (a
// superuser's, as Start returns) and returns the DSN that names it.
func NewDatabase(t testing.TB, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return dsn + " dbname=" + name
}

var dbSeq atomic.Int64

// binDir finds the directory of initdb and postgres: PATH, else the
// newest of Debian's /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("the PostgreSQL server binaries (initdb, postgres) are not on PATH nor under /usr/lib/postgresql")
}

// version is the major version of a /usr/lib/postgresql/<version>/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// dropRoot returns how to run a server binary: as it is, or, when this
// process is root, through setpriv as runAs, who is given dirs.
func dropRoot(dirs ...string) (func(bin string, args ...string) *exec.Cmd, error) {
	if os.Geteuid() != 0 {
		return exec.Command, nil
	}
	u, err := user.Lookup(runAs)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres refuses to run as root and there is no user %s to run it as: %w", runAs, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, d := range dirs {
		if err := os.Chown(d, uid, gid); err != nil {
			return nil, err
		}
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres refuses to run as root and setpriv (util-linux) is missing: %w", err)
	}
	return func(bin string, args ...string) *exec.Cmd {
		return exec.Command(setpriv, append([]string{"--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "--", bin}, args...)...)
	}, nil
}
