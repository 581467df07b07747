package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// tlsServer starts a ptcd gRPC service over TLS with a self-signed
// certificate for 127.0.0.1, requiring the bearer token; it returns the
// address and the certificate's PEM file.
func tlsServer(t *testing.T, token string) (addr, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ptcd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	authn, err := auth.New(true, []auth.Tenant{{Name: "t", TokenHashes: []string{auth.HashToken(token)}}})
	if err != nil {
		t.Fatal(err)
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	gs := grpc.NewServer(append(server.Interceptors(server.ChainConfig{Log: discardLog(), Auth: authn.Authenticate}), grpc.Creds(creds))...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The serve goroutine ends at Stop.
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String(), caFile
}

// TestServerTLSAndToken: `ptc run --server` and `ptc tools --server` reach
// a ptcd over TLS with a bearer token, as `ptc mcp --server` does, with the
// same flags.
func TestServerTLSAndToken(t *testing.T) {
	const token = "cli-token-0123456789abcdef"
	addr, ca := tlsServer(t, token)
	script := writeScript(t, "s.js", `return (await tools.get_team_members({department: "support"})).length`)
	state := writeScript(t, "state.txt", "not-a-continuation")
	cases := []struct {
		name  string
		token string
		args  []string
		code  int
		out   string // in stdout (code 0) or stderr
	}{
		{"run (a Session stream) with the CA and the token", token, []string{"run", script, "--server", addr, "--tls-ca", ca}, 0, "7"},
		{"run with the token, flags first", token, []string{"run", "--server", addr, "--tls-ca", ca, script}, 0, "7"},
		{"tools with the CA and the token", token, []string{"tools", "--server", addr, "--tls-ca", ca}, 0, "get_team_members"},
		{"run without the token", "", []string{"run", script, "--server", addr, "--tls-ca", ca}, exitRejected, "credentials are missing"},
		{"run with a wrong token", "not-the-token-0123456789", []string{"run", script, "--server", addr, "--tls-ca", ca}, exitRejected, "bearer token is not valid"},
		{"tools without the token", "", []string{"tools", "--server", addr, "--tls-ca", ca}, exitRejected, "ptc: UNAUTHENTICATED: credentials are missing"},
		{"tools in plaintext to a TLS server", "", []string{"tools", "--server", addr}, exitUsage, "if it serves TLS, add --tls (or --tls-ca FILE)"},
		{"run trusting only the system's CAs", token, []string{"run", script, "--server", addr, "--tls"}, exitUsage, "the TLS handshake failed: if the server's certificate is signed by a CA of your own, trust it with --tls-ca FILE"},
		{"run in plaintext to a TLS server", "", []string{"run", script, "--server", addr}, exitUsage, "UNAVAILABLE"},
		{"a CA file that does not exist", token, []string{"run", script, "--server", addr, "--tls-ca", "/does/not/exist.pem"}, exitRejected, "--tls-ca"},
		{"a CA file without a certificate", token, []string{"run", script, "--server", addr, "--tls-ca", script}, exitRejected, "holds no PEM certificate"},
		{"resume reaches the server with the token", token, []string{"resume", state, "--server", addr, "--tls-ca", ca}, exitRejected, "continuation"},
		{"resume without the token", "", []string{"resume", state, "--server", addr, "--tls-ca", ca}, exitRejected, "credentials are missing"},
		{"run: --tls without --server", "", []string{"run", script, "--tls"}, exitUsage, "--tls and --tls-ca apply to --server"},
		{"resume: --tls without --server", "", []string{"resume", state, "--tls"}, exitUsage, "--tls and --tls-ca apply to --server"},
		{"tools: --tls-ca without --server", "", []string{"tools", "--tls-ca", ca}, exitUsage, "--tls and --tls-ca apply to --server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(tokenEnv, c.token)
			code, stdout, stderr := ptcMain(t, c.args...)
			got := stderr
			if c.code == 0 {
				got = stdout
			}
			if code != c.code || !strings.Contains(got, c.out) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant %q", code, c.code, stdout, stderr, c.out)
			}
		})
	}
}
