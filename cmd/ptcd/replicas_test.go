package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/durable/redistest"
	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/tools"
)

// whoServer answers the tool who.am of replica rN with "rN": each
// replica's configuration points the tool at its own path, so a result
// names the replica that made the call. While a replica's calls are
// held, each is announced on held and answered once release is closed
// (or never, when the replica dies).
type whoServer struct {
	*httptest.Server
	mu      sync.Mutex
	holding string
	held    chan string // nil until the first hold
	release chan struct{}
}

func newWhoServer() *whoServer {
	w := &whoServer{}
	w.Server = httptest.NewServer(w)
	return w
}

func (s *whoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/who/")
	s.mu.Lock()
	release, held := s.release, s.held
	hold := name == s.holding
	s.mu.Unlock()
	if hold {
		select {
		case held <- name:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "%q", name)
}

// hold starts holding name's calls: each is announced on the channel it
// returns; the func (idempotent) releases them.
func (s *whoServer) hold(name string) (<-chan string, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding, s.release, s.held = name, make(chan struct{}), make(chan string, 64)
	rel, held := s.release, s.held
	var once sync.Once
	return held, func() {
		once.Do(func() {
			s.mu.Lock()
			s.holding = ""
			s.mu.Unlock()
			close(rel)
		})
	}
}

// replicaConfig is replica name's ptcd.yaml: the shared durable key and
// Redis store, and who.am pointing at name's path; forward advertises
// the replica's address to the others (durable.forward.advertise).
func replicaConfig(whoURL, name, addr string, forward bool) string {
	cfg := durableConfig
	if forward {
		cfg += "  forward: {advertise: \"" + addr + "\"}\n"
	}
	cfg += `  lease: {ttl: 2s, renew_every: 500ms}
  store:
    redis_url_env: PTC_TEST_REDIS
    redis_prefix: "replicas:"
shutdown_grace: 20s
tool_sources:
  - name: who
    type: http
    tools:
      - name: am
        method: GET
        url: ` + whoURL + `/who/` + name + `
        input_schema: {type: object}
`
	return cfg
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startReplica starts ptcd listening on addr (see startProcess).
func startReplica(t *testing.T, config, addr string, env ...string) *ptcdProcess {
	t.Helper()
	p := startProcessArgs(t, config, []string{"--listen", addr}, env...)
	if p.addr != addr {
		t.Fatalf("replica listens on %s, not %s", p.addr, addr)
	}
	return p
}

// haproxyConfig balances HTTP/2 requests (gRPC calls) one by one, round
// robin, over h2c backends; a request refused by a stopping backend is
// sent to another one.
func haproxyConfig(front string, backends []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  maxconn 2000
defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch 1
  retry-on conn-failure
frontend grpc
  bind %s proto h2
  default_backend replicas
backend replicas
  balance roundrobin
`, front)
	for i, a := range backends {
		fmt.Fprintf(&b, "  server r%d %s proto h2 check inter 200ms fall 1 rise 2\n", i, a)
	}
	return b.String()
}

// haproxyBin finds haproxy (on PATH or in /usr/sbin); without it the
// test is skipped, except in CI, where it fails.
func haproxyBin(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("haproxy"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	testenv.Missing(t, "haproxy is not installed (the multi-replica test needs a real balancer)", "apt-get install haproxy (.ci/run does)")
	return ""
}

// startHAProxy runs haproxy in the foreground and waits until it
// accepts connections. Without haproxy the test is skipped, except in CI.
func startHAProxy(t *testing.T, front string, backends []string) {
	t.Helper()
	bin := haproxyBin(t)
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(front, backends)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	// The waiter ends when haproxy exits (killed by the cleanup).
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", front)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("haproxy exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not accept connections: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a port, not synchronising goroutines
	}
}

// cluster is three ptcd replicas sharing Redis behind HAProxy.
type cluster struct {
	tool     *whoServer
	replicas []*ptcdProcess
	client   *ptc.Client // through the balancer
}

func startCluster(t *testing.T, forward bool) *cluster {
	t.Helper()
	haproxyBin(t)
	url := redistest.Start(t)
	who := newWhoServer()
	t.Cleanup(who.Close)
	c := &cluster{tool: who}
	var addrs []string
	for i := range 3 {
		addr := freeAddr(t)
		name := fmt.Sprintf("r%d", i)
		c.replicas = append(c.replicas, startReplica(t, replicaConfig(who.URL, name, addr, forward), addr, durableEnv, "PTC_TEST_REDIS="+url))
		addrs = append(addrs, addr)
	}
	front := freeAddr(t)
	startHAProxy(t, front, addrs)
	// No transparent retries by gRPC: a call that fails reaches the
	// test's own retry loop.
	cl, err := ptc.Dial(front, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	c.client = cl
	return c
}

// whoScript names the replica that runs it.
const whoScript = `return await tools.who.am({});`

// pauseScript names the replica that ran its first segment and the one
// that ran the segment after the pause (a re-run replays the first call
// from the journal, so its answer still names the replica that parked).
// Before it pauses it computes a while: what a re-run does again.
const pauseScript = `
const parked = await tools.who.am({});
let x = 0;
for (let i = 0; i < 300000; i++) x = (x + i * i) % 1000003;
await tools.ask({});
const resumed = await tools.who.am({n: 2});
return {parked, resumed};`

var askTool = []tools.Tool{{Definition: tools.Definition{Name: "ask"}}}

// retriable reports whether a call failed in a way a client retries: the
// replica or the balancer was unavailable.
func retriable(err error) bool {
	c := ptc.CodeOf(err)
	return c == ptc.Unavailable || c == ptc.ResourceExhausted || c == ptc.Aborted
}

// who runs whoScript through the balancer, retrying when retry is set,
// and returns the replica's name and the retries made.
func (c *cluster) who(ctx context.Context, retry bool) (string, int, error) {
	for n := 0; ; n++ {
		res, err := c.client.Execute(ctx, ptc.Request{Source: whoScript})
		if err == nil && res.Error != nil {
			err = fmt.Errorf("execution failed: %v", res.Error)
		}
		if err != nil {
			if retry && retriable(err) && n < 50 && ctx.Err() == nil {
				continue
			}
			return "", n, err
		}
		var name string
		if err := json.Unmarshal(res.Result, &name); err != nil {
			return "", n, err
		}
		return name, n, nil
	}
}

// pause pauses pauseScript through the balancer.
func (c *cluster) pause(t *testing.T) *ptc.Result {
	t.Helper()
	res, err := c.client.Execute(context.Background(), ptc.Request{Source: pauseScript, Resumable: true, ClientTools: askTool})
	if err != nil || !res.RequiresAction() {
		t.Fatalf("not paused: %v %+v", err, res)
	}
	return res
}

// pauseResume pauses pauseScript through the balancer, resumes it
// through the balancer and returns where each segment ran and how long
// the Resume took.
func (c *cluster) pauseResume(t *testing.T) (parked, resumed string, took time.Duration) {
	t.Helper()
	return c.resume(t, c.pause(t))
}

// resume resumes a paused pauseScript through the balancer.
func (c *cluster) resume(t *testing.T, res *ptc.Result) (parked, resumed string, took time.Duration) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	out, err := c.client.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`"ok"`)})
	took = time.Since(start)
	if err != nil || out.Error != nil {
		t.Fatalf("resume: %v %+v", err, out)
	}
	var r struct{ Parked, Resumed string }
	if err := json.Unmarshal(out.Result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Parked, r.Resumed, took
}

// TestReplicasBehindHAProxy runs three ptcd replicas sharing Redis behind
// a real HAProxy (HTTP/2 both sides, h2c to the replicas, one balancing
// decision per request): calls spread over the replicas; executions
// paused on one are resumed behind the balancer — re-run by whichever
// replica the Resume reaches, or, with durable.forward.advertise, forwarded to
// the replica that parked them — and a continuation is used once across
// replicas; one replica drained with SIGTERM under load fails no call;
// one killed with kill -9 under load costs the clients retries, which
// succeed. The resume latency of both ways is logged.
func TestReplicasBehindHAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries and haproxy")
	}
	const pauses = 12
	latency := map[bool]time.Duration{}
	for _, forward := range []bool{false, true} {
		name := map[bool]string{false: "re-run", true: "forwarded"}[forward]
		t.Run(name, func(t *testing.T) {
			c := startCluster(t, forward)
			ctx := context.Background()

			// Requests spread: round robin gives each replica a third.
			spread := map[string]int{}
			for range 30 {
				who, _, err := c.who(ctx, false)
				if err != nil {
					t.Fatal(err)
				}
				spread[who]++
			}
			t.Logf("30 calls per replica: %v", spread)
			for _, r := range []string{"r0", "r1", "r2"} {
				if spread[r] < 5 {
					t.Fatalf("replica %s served %d of 30 calls: %v", r, spread[r], spread)
				}
			}

			// Pause on one replica, resume behind the balancer.
			var total time.Duration
			moved := 0
			for range pauses {
				parked, resumed, took := c.pauseResume(t)
				total += took
				if parked != resumed {
					moved++
				}
			}
			latency[forward] = total / pauses
			t.Logf("%d resumes: %d ran on a replica other than the one that parked them; mean resume latency %s",
				pauses, moved, latency[forward])
			if forward && moved != 0 {
				t.Fatalf("with forwarding, %d of %d resumes ran away from the replica that parked them", moved, pauses)
			}
			if !forward && moved == 0 {
				t.Fatalf("round robin sent none of %d resumes to another replica", pauses)
			}

			// Single use across replicas: other answers are refused on
			// every replica the balancer picks.
			res, err := c.client.Execute(ctx, ptc.Request{Source: pauseScript, Resumable: true, ClientTools: askTool})
			if err != nil || !res.RequiresAction() {
				t.Fatalf("not paused: %v", err)
			}
			call := res.Pending[0].CallID
			if _, err := c.client.Resume(ctx, res.Continuation, ptc.Answer{CallID: call, Output: json.RawMessage(`"a"`)}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				_, err := c.client.Resume(ctx, res.Continuation, ptc.Answer{CallID: call, Output: json.RawMessage(`"b"`)})
				if ptc.CodeOf(err) != ptc.FailedPrecondition {
					t.Fatalf("other answers, attempt %d: %v, want FAILED_PRECONDITION", i, err)
				}
			}
			if !forward {
				return
			}

			// Drain r2 with SIGTERM under load, with calls in flight on
			// it: no call fails.
			failed, calls := c.underLoad(t, false, func() {
				held, release := c.tool.hold("r2")
				<-held
				if err := c.replicas[2].cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				release()
				if err := c.replicas[2].cmd.Wait(); err != nil {
					t.Errorf("drained replica exited with %v", err)
				}
			})
			t.Logf("SIGTERM under load: %d calls, %d failed", calls, failed)
			if failed != 0 {
				t.Fatalf("%d of %d calls failed while a replica drained", failed, calls)
			}

			// Executions parked on r0 and r1 before r1 dies.
			var paused []*ptc.Result
			for range 4 {
				paused = append(paused, c.pause(t))
			}

			// kill -9 r1 under load: retries succeed.
			failed, calls = c.underLoad(t, true, func() {
				held, release := c.tool.hold("r1")
				defer release()
				<-held
				c.replicas[1].kill()
			})
			t.Logf("kill -9 under load: %d calls, %d failed after retries", calls, failed)
			if failed != 0 {
				t.Fatalf("%d of %d calls failed after retries while a replica was killed", failed, calls)
			}
			// The survivor resumes its own parked executions from memory and
			// re-runs those the dead replica parked.
			rerun := 0
			for _, res := range paused {
				parked, resumed, _ := c.resume(t, res)
				if resumed != "r0" {
					t.Fatalf("resumed on %s with only r0 alive", resumed)
				}
				if parked == "r1" {
					rerun++
				}
			}
			t.Logf("after kill -9: %d of %d paused executions re-run by the survivor, the rest resumed from memory", rerun, len(paused))
			if rerun == 0 {
				t.Fatalf("none of %d paused executions was parked on the killed replica", len(paused))
			}
		})
	}
	if latency[false] > 0 && latency[true] > 0 {
		t.Logf("mean resume latency behind HAProxy: %s re-run on the receiving replica, %s forwarded to the parking one",
			latency[false], latency[true])
	}
}

// underLoad runs four clients calling in a loop while disrupt runs, and
// 20 more calls each after it returned; it returns the failed calls (after
// retries when retry is set) and all calls.
func (c *cluster) underLoad(t *testing.T, retry bool, disrupt func()) (failed, calls int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nFailed, nCalls, nRetries atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	started := make(chan struct{})
	var once sync.Once
	for range 4 {
		wg.Add(1)
		// Each client ends 20 calls after done is closed.
		go func() {
			defer wg.Done()
			after := 0
			for after < 20 && ctx.Err() == nil {
				select {
				case <-done:
					after++
				default:
				}
				_, n, err := c.who(ctx, retry)
				if nCalls.Add(1) >= 20 {
					once.Do(func() { close(started) })
				}
				nRetries.Add(int64(n))
				if err != nil {
					nFailed.Add(1)
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	// Let some calls run before the disruption: 20 of them.
	select {
	case <-started:
	case <-ctx.Done():
	}
	disrupt()
	close(done)
	wg.Wait()
	slices.Sort(errs)
	if len(errs) > 0 {
		t.Logf("failures: %v", slices.Compact(errs))
	}
	t.Logf("retries: %d", nRetries.Load())
	return int(nFailed.Load()), int(nCalls.Load())
}
