package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/testenv"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// metricsAddr returns the metrics listener's address from ptcd's logs
// (logged before ready is signalled).
func metricsAddr(t *testing.T, logs *testenv.SyncBuffer) string {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "metrics listening" {
			return rec.Addr
		}
	}
	t.Fatalf("no metrics address in the logs: %s", logs.String())
	return ""
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func jsReq(src string) *ptcv1.ExecuteRequest {
	return &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: src}}
}

func withBearer(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

const tenantsYAML = `
auth:
  enabled: true
tenants:
  - name: a
    token_hashes: [%q]
  - name: b
    token_hashes: [%q]
    tools: [get_expenses]
`

func TestAuthOutcomes(t *testing.T) {
	cfg := writeFile(t, "ptcd.yaml", fmt.Sprintf(tenantsYAML, auth.HashToken("token-a"), auth.HashToken("token-b")))
	addr, _, _ := startPtcd(t, "--config", cfg, "--demo-tools")
	conn := dial(t, addr, nil)
	rpc := ptcv1.NewRunnerServiceClient(conn)
	cases := []struct {
		name  string
		ctx   context.Context
		code  codes.Code
		tools int
	}{
		{"no token", context.Background(), codes.Unauthenticated, 0},
		{"bad token", withBearer("token-x"), codes.Unauthenticated, 0},
		{"good token", withBearer("token-a"), codes.OK, 3},
		{"good token, narrow tenant", withBearer("token-b"), codes.OK, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := rpc.Execute(tc.ctx, jsReq("return 1"))
			if status.Code(err) != tc.code || (err == nil && res.GetResultJson() != "1") {
				t.Fatalf("Execute: %v %v, want %v", res, err, tc.code)
			}
			lt, err := rpc.ListTools(tc.ctx, &ptcv1.ListToolsRequest{})
			if status.Code(err) != tc.code || len(lt.GetTools()) != tc.tools {
				t.Fatalf("ListTools: %d tools, %v", len(lt.GetTools()), err)
			}
		})
	}
	// A tool outside the tenant's set is PERMISSION_DENIED.
	req := jsReq("return 1")
	req.AllowedTools = []string{"get_team_members"}
	if _, err := rpc.Execute(withBearer("token-b"), req); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("err = %v", err)
	}
	// Health checks need no token; reflection works with one.
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "ptc.v1.RunnerService"})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}
	rs, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(withBearer("token-a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	m, err := rs.Recv()
	if err != nil || !strings.Contains(fmt.Sprint(m.GetListServicesResponse()), "ptc.v1.RunnerService") {
		t.Fatalf("reflection: %v %v", m, err)
	}
	_ = rs.CloseSend()
}

// TestListenWithoutAuth: auth is off by default only on loopback; a
// non-loopback listener needs tenants or an explicit --insecure-no-auth.
func TestListenWithoutAuth(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"all interfaces without auth", []string{"--listen", "0.0.0.0:0"}, 2, "not loopback"},
		{"auth explicitly off", []string{"--listen", ":0", "--auth.enabled=false"}, 2, "not loopback"},
		{"auth on without tenants", []string{"--listen", "127.0.0.1:0", "--auth.enabled"}, 2, "no tenant"},
		{"insecure flag", []string{"--listen", "0.0.0.0:0", "--insecure-no-auth"}, 0, "authentication is off"},
		{"loopback default", []string{"--listen", "127.0.0.1:0"}, 0, `"auth":false`},
		{"in-process without acknowledgement", []string{"--listen", "127.0.0.1:0", "--workers.mode", "inprocess"}, 2, "not a sandbox"},
		{"in-process acknowledged", []string{"--listen", "127.0.0.1:0", "--workers.mode", "inprocess", "--workers.insecure-inprocess"}, 0, `"level":"WARN","msg":"scripts run inside ptcd itself`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			logs := &testenv.SyncBuffer{}
			ready := make(chan string, 1)
			code := make(chan int, 1)
			go func() {
				code <- run(ctx, append(tc.args, "--metrics-listen", "127.0.0.1:0"), io.Discard, logs, ready)
			}()
			var c int
			select {
			case <-ready:
				cancel()
				c = <-code
			case c = <-code:
			}
			if c != tc.code || !strings.Contains(logs.String(), tc.msg) {
				t.Fatalf("exit %d, want %d; logs: %s", c, tc.code, logs.String())
			}
		})
	}
}

func TestHashToken(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string
	}{
		{"token", nil, "a-long-random-token-value\n", 0, auth.HashToken("a-long-random-token-value")},
		{"empty", nil, "\n", 2, "no token"},
		{"argument", []string{"secret"}, "", 2, "standard input"},
		{"too long", nil, strings.Repeat("x", auth.MaxTokenBytes+1), 2, "longer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if c := hashToken(tc.args, strings.NewReader(tc.stdin), &out, &errb); c != tc.code || !strings.Contains(out.String()+errb.String(), tc.out) {
				t.Fatalf("exit %d out %q err %q", c, out.String(), errb.String())
			}
		})
	}
}

// TestMetricsEndpoint scrapes /metrics over HTTP after a few executions.
func TestMetricsEndpoint(t *testing.T) {
	addr, _, logs := startPtcd(t, "--demo-tools")
	rpc := ptcv1.NewRunnerServiceClient(dial(t, addr, nil))
	for _, src := range []string{`return (await tools.get_team_members({department: "engineering"})).length`, `return 1`, `throw new Error("no")`} {
		if _, err := rpc.Execute(context.Background(), jsReq(src)); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + metricsAddr(t, logs)
	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics %d", code)
	}
	for _, want := range []string{
		`ptc_executions_total{language="javascript",outcome="ok"} 2`,
		`ptc_executions_total{language="javascript",outcome="SCRIPT_ERROR"} 1`,
		`ptc_tool_calls_total{outcome="ok",tool="get_team_members"} 1`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Execute",grpc_service="ptc.v1.RunnerService",grpc_type="unary"} 3`,
		`ptc_admission_wait_seconds_count 3`,
		"ptc_worker_pool_size ",
		"ptc_worker_restarts_total",
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz %d %q", code, body)
	}
}

// TestDrain: on shutdown, health turns NOT_SERVING and /readyz 503 while
// an in-flight execution finishes within the grace period and gets its
// result.
func TestDrain(t *testing.T) {
	addr, stop, logs := startPtcd(t, "--shutdown-grace", "1m")
	base := "http://" + metricsAddr(t, logs)
	conn := dial(t, addr, nil)
	rpc := ptcv1.NewRunnerServiceClient(conn)

	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := watch.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatal(m, err)
	}

	s, err := rpc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{
		Execute:     jsReq(`return "finished: " + await tools.wait({})`),
		ClientTools: []*ptcv1.ToolDefinition{{Name: "wait"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv()
	if err != nil || m.GetToolCall() == nil {
		t.Fatal(m, err)
	}

	done := make(chan int)
	go func() { done <- stop() }()

	if m, err := watch.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health during drain: %v %v", m, err)
	}
	wcancel() // a watch is an RPC too: end it so the drain can complete
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Fatalf("/readyz during drain: %d %q", code, body)
	}

	err = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{
		CallId: m.GetToolCall().GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `"yes"`}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil || r.GetResult().GetError() != nil || r.GetResult().GetResultJson() != `"finished: yes"` {
		t.Fatalf("in-flight result: %v %v", r, err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// testPKI is a CA with server and client certificates, generated per test.
type testPKI struct {
	dir                      string
	caFile, certFile, keyFil string
	pool                     *x509.CertPool
	ca                       *x509.Certificate
	caKey                    *ecdsa.PrivateKey
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), pool: x509.NewCertPool()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ptc test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.pool.AddCert(p.ca)
	p.caFile = filepath.Join(p.dir, "ca.pem")
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := p.issue(t, "localhost", x509.ExtKeyUsageServerAuth)
	p.certFile, p.keyFil = filepath.Join(p.dir, "server.pem"), filepath.Join(p.dir, "server.key")
	certPEM, keyPEM := encodePair(t, cert)
	if os.WriteFile(p.certFile, certPEM, 0o600) != nil || os.WriteFile(p.keyFil, keyPEM, 0o600) != nil {
		t.Fatal("write server cert")
	}
	return p
}

func (p *testPKI) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func encodePair(t *testing.T, c tls.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	kb, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestTLSAndClientCertificates: a TLS round trip with a token, and mTLS
// identities mapped to tenants.
func TestTLSAndClientCertificates(t *testing.T) {
	pki := newPKI(t)
	other := newPKI(t) // a CA the server does not trust
	cfg := writeFile(t, "ptcd.yaml", fmt.Sprintf(`
tls:
  cert_file: %s
  key_file: %s
  client_ca_file: %s
auth:
  enabled: true
tenants:
  - name: a
    token_hashes: [%q]
  - name: harness
    client_identities: [harness-b]
    tools: [get_expenses]
`, pki.certFile, pki.keyFil, pki.caFile, auth.HashToken("token-a")))
	addr, _, _ := startPtcd(t, "--config", cfg, "--demo-tools")

	tlsCreds := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: pki.pool, ServerName: "localhost", Certificates: certs, MinVersion: tls.VersionTLS12})
	}
	cases := []struct {
		name  string
		creds credentials.TransportCredentials
		ctx   context.Context
		code  codes.Code
		tools int
	}{
		{"tls with token", tlsCreds(), withBearer("token-a"), codes.OK, 3},
		{"tls without credentials", tlsCreds(), context.Background(), codes.Unauthenticated, 0},
		{"client certificate of a tenant", tlsCreds(pki.issue(t, "harness-b", x509.ExtKeyUsageClientAuth)), context.Background(), codes.OK, 1},
		{"client certificate of no tenant", tlsCreds(pki.issue(t, "stranger", x509.ExtKeyUsageClientAuth)), context.Background(), codes.Unauthenticated, 0},
		{"client certificate of an untrusted CA", tlsCreds(other.issue(t, "harness-b", x509.ExtKeyUsageClientAuth)), context.Background(), codes.Unavailable, 0},
		{"plaintext to a TLS listener", insecure.NewCredentials(), withBearer("token-a"), codes.Unavailable, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rpc := ptcv1.NewRunnerServiceClient(dial(t, addr, tc.creds))
			ctx, cancel := context.WithTimeout(tc.ctx, 30*time.Second)
			defer cancel()
			lt, err := rpc.ListTools(ctx, &ptcv1.ListToolsRequest{})
			if status.Code(err) != tc.code || len(lt.GetTools()) != tc.tools {
				t.Fatalf("ListTools: %d tools, %v; want %v", len(lt.GetTools()), err, tc.code)
			}
			if tc.code != codes.OK {
				return
			}
			res, err := rpc.Execute(ctx, jsReq(`return "over tls"`))
			if err != nil || res.GetResultJson() != `"over tls"` {
				t.Fatal(res, err)
			}
		})
	}
}

// TestPayloadLogging: scripts reach the logs only at debug level.
func TestPayloadLogging(t *testing.T) {
	const marker = "SECRET_SCRIPT_MARKER"
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			addr, stop, logs := startPtcd(t, "--logging.level", level)
			rpc := ptcv1.NewRunnerServiceClient(dial(t, addr, nil))
			if _, err := rpc.Execute(context.Background(), jsReq(`return "`+marker+`"`)); err != nil {
				t.Fatal(err)
			}
			stop()
			got := logs.String()
			if !strings.Contains(got, `"grpc.method":"Execute"`) || !strings.Contains(got, `"outcome":"ok"`) {
				t.Fatalf("no call record: %s", got)
			}
			if strings.Contains(got, marker) != (level == "debug") {
				t.Fatalf("level %s: script in logs = %v", level, strings.Contains(got, marker))
			}
		})
	}
}

// TestMessageSizeLimits: grpc.max_recv_bytes and grpc.max_send_bytes
// bound the messages.
func TestMessageSizeLimits(t *testing.T) {
	addr, _, _ := startPtcd(t, "--grpc.max-recv-bytes", "4KiB", "--grpc.max-send-bytes", "4KiB")
	rpc := ptcv1.NewRunnerServiceClient(dial(t, addr, nil))
	cases := []struct {
		name string
		src  string
		code codes.Code
	}{
		{"small", `return 1`, codes.OK},
		{"request too large", `return 1 // ` + strings.Repeat("x", 8<<10), codes.ResourceExhausted},
		{"response too large", `return "x".repeat(10000)`, codes.ResourceExhausted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rpc.Execute(context.Background(), jsReq(tc.src)); status.Code(err) != tc.code {
				t.Fatalf("err = %v, want %v", err, tc.code)
			}
		})
	}
}

// TestShutdownWithOpenWatch: a health Watch that its client never closes
// does not hold the shutdown past the grace period.
func TestShutdownWithOpenWatch(t *testing.T) {
	addr, stop, logs := startPtcd(t, "--shutdown-grace", "50ms")
	watch, err := healthpb.NewHealthClient(dial(t, addr, nil)).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(logs.String(), "closing every connection") {
		t.Fatalf("logs: %s", logs.String())
	}
}
