package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/fault"
)

// tokenEnv holds the bearer token the commands that talk to a ptcd send.
const tokenEnv = "PTC_TOKEN"

// serverFlags are the flags of every command that talks to a running ptcd
// (run, tools, mcp): its address and how to reach it. The bearer token
// comes from $PTC_TOKEN, never from a flag (a command line is visible to
// every user of the host).
type serverFlags struct {
	addr  string
	tls   bool
	tlsCA string
}

// register adds --server (described by what), --tls and --tls-ca to fs.
func (s *serverFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&s.addr, "server", "", what+"; a bearer token from $"+tokenEnv)
	fs.BoolVar(&s.tls, "tls", false, "with --server: connect over TLS, trusting the system's CAs")
	fs.StringVar(&s.tlsCA, "tls-ca", "", "with --server: connect over TLS, trusting the CA certificates in this PEM file")
}

// defaultPort is the port ptcd listens on unless configured otherwise.
const defaultPort = "7878"

// check reports TLS flags given without --server, and a --server address
// without a port (gRPC would dial 443, where ptcd does not listen).
func (s serverFlags) check() error {
	if s.addr == "" && (s.tls || s.tlsCA != "") {
		return errors.New("--tls and --tls-ca apply to --server: name the server")
	}
	if s.addr == "" || strings.Contains(s.addr, ":/") || strings.HasPrefix(s.addr, "unix:") {
		return nil // a gRPC target with a scheme (dns:///, unix:) says what it means
	}
	if _, _, err := net.SplitHostPort(s.addr); err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && strings.Contains(ae.Err, "missing port") {
			return fmt.Errorf("--server %s has no port: ptcd listens on %s unless configured otherwise (--server %s)",
				s.addr, defaultPort, net.JoinHostPort(strings.Trim(s.addr, "[]"), defaultPort))
		}
		return fmt.Errorf("--server %s is not HOST:PORT: %v", s.addr, err)
	}
	return nil
}

// reachHint says what to check when the server could not be reached.
func (s serverFlags) reachHint(err error) string {
	msg := err.Error()
	secure := s.tls || s.tlsCA != ""
	switch {
	case strings.Contains(msg, "handshake") || strings.Contains(msg, "certificate"):
		if s.tlsCA == "" {
			return "the TLS handshake failed: if the server's certificate is signed by a CA of your own, trust it with --tls-ca FILE"
		}
		return "the TLS handshake failed: check that --tls-ca holds the CA that signed the server's certificate"
	case !secure && (strings.Contains(msg, "server preface") || strings.Contains(msg, "connection reset")):
		return "the server closed the plaintext connection: if it serves TLS, add --tls (or --tls-ca FILE)"
	}
	return "check that ptcd is running and listens there"
}

// failed reports on stderr an error of a request that did not run, and
// returns the exit code: a server that cannot be reached is an I/O error
// (exitUsage), anything else a rejected request (exitRejected).
func (s serverFlags) failed(stderr io.Writer, err error) int {
	var fe *fault.Error
	unreachable := ptc.CodeOf(err) == ptc.Unavailable || errors.As(err, &fe) && fe.Code == fault.CodeUnavailable
	if s.addr != "" && unreachable {
		fmt.Fprintf(stderr, "ptc: cannot reach ptcd at %s: %v; %s\n", s.addr, err, s.reachHint(err))
		return exitUsage
	}
	fmt.Fprintln(stderr, "ptc:", err)
	return exitRejected
}

// dialOptions are the gRPC options for the server: TLS if asked for, and
// the bearer token of $PTC_TOKEN if set.
func (s serverFlags) dialOptions() ([]grpc.DialOption, error) {
	secure := s.tls || s.tlsCA != ""
	creds := insecure.NewCredentials()
	if secure {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.tlsCA != "" {
			pem, err := os.ReadFile(s.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", s.tlsCA)
			}
		}
		creds = credentials.NewTLS(tc)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if token := os.Getenv(tokenEnv); token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken{token: token, secure: secure}))
	}
	return opts, nil
}

// dial connects the Go client to the server.
func (s serverFlags) dial() (*ptc.Client, error) {
	opts, err := s.dialOptions()
	if err != nil {
		return nil, err
	}
	return ptc.Dial(s.addr, opts...)
}

// conn opens a gRPC connection to the server.
func (s serverFlags) conn() (*grpc.ClientConn, error) {
	opts, err := s.dialOptions()
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(s.addr, opts...)
}

// bearerToken sends "authorization: Bearer <token>" with every call.
type bearerToken struct {
	token  string
	secure bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: a
// token may cross plaintext only to a server reached without TLS on
// purpose (a loopback ptcd).
func (b bearerToken) RequireTransportSecurity() bool { return b.secure }
