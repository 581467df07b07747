package service

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"github.com/ptcrun/ptc/internal/config"
)

// BindError is a listener that could not be bound (its address in use,
// not local, or not allowed). It names the listener, the flag and key
// that set its address, and what to do.
type BindError struct {
	// Listener is "gRPC", "metrics" or "MCP".
	Listener string
	// Flag and Key set the address (e.g. "--metrics-listen",
	// "metrics.listen").
	Flag, Key string
	// Off says how to turn the listener off; empty when it cannot be.
	Off string
	// Err is net.Listen's error.
	Err error
}

// Error implements error: "metrics listener (--metrics-listen,
// metrics.listen): listen tcp 127.0.0.1:9090: bind: address already in
// use: give another address, or --metrics-listen "" to turn it off".
func (e *BindError) Error() string {
	msg := fmt.Sprintf("%s listener (%s, %s): %v: give another address", e.Listener, e.Flag, e.Key, e.Err)
	if e.Off != "" {
		msg += ", or " + e.Off
	}
	return msg
}

// Unwrap returns net.Listen's error.
func (e *BindError) Unwrap() error { return e.Err }

// listeners are ptcd's bound listeners: gRPC, and metrics and MCP when
// their sections turn them on (nil otherwise).
type listeners struct {
	grpc, metrics, mcp net.Listener
}

// bind binds every listener the configuration asks for, or none: on an
// error the ones already bound are closed. The error is a *BindError.
func bind(c *config.Config) (*listeners, error) {
	var l listeners
	var err error
	if l.grpc, err = net.Listen("tcp", c.Listen); err != nil {
		return nil, &BindError{Listener: "gRPC", Flag: "--listen", Key: "listen", Err: err}
	}
	if c.Metrics.Listen != "" {
		if l.metrics, err = net.Listen("tcp", c.Metrics.Listen); err != nil {
			l.close()
			return nil, &BindError{Listener: "metrics", Flag: "--metrics-listen", Key: "metrics.listen", Err: err,
				Off: `--metrics-listen "" to turn it off`}
		}
	}
	if c.MCP.Enabled() {
		if l.mcp, err = net.Listen("tcp", c.MCP.Listen); err != nil {
			l.close()
			return nil, &BindError{Listener: "MCP", Flag: "--mcp.listen", Key: "mcp.listen", Err: err,
				Off: `--mcp.listen "" to turn it off`}
		}
	}
	return &l, nil
}

// close closes every bound listener.
func (l *listeners) close() {
	for _, ln := range []net.Listener{l.grpc, l.metrics, l.mcp} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// tlsConfig returns the TLS configuration of the gRPC and MCP listeners
// when the tls section is set, nil (plaintext) otherwise.
func tlsConfig(t config.TLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load cert_file and key_file: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: client_ca_file %s holds no PEM certificate", t.ClientCAFile)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.VerifyClientCertIfGiven
		if t.RequireClientCert {
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return tc, nil
}
