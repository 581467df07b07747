package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/auth"
)

func TestServingFixture(t *testing.T) {
	c, err := Load(Options{File: "testdata/serving.yaml", LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckServe(); err != nil {
		t.Fatal(err)
	}
	ts := c.AuthTenants()
	if len(ts) != 2 || ts[0].Ceilings.Timeout != time.Minute || ts[0].Rate != 20 || ts[1].ClientIdentities[1] != "batch-runner" {
		t.Fatalf("tenants %+v", ts)
	}
	a := c.AdmissionConfig()
	if a.MaxConcurrent != 32 || a.MaxQueue != 100 || a.MaxWait != 5*time.Second {
		t.Fatalf("admission %+v", a)
	}
	if !c.AuthEnabled() || !c.TLS.Enabled() || c.GRPC.Keepalive.MaxConnectionAge != Duration(10*time.Minute) {
		t.Fatalf("%+v", c)
	}
}

func TestServingDefaults(t *testing.T) {
	c := Default()
	if c.Metrics.Listen != DefaultMetricsListen || c.Admission.MaxConcurrent <= 0 || c.GRPC.MaxRecvBytes < 16<<20+8<<20 || c.Logging.Format != "json" {
		t.Fatalf("%+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.AuthEnabled() {
		t.Fatal("auth must be off by default on the loopback default listener")
	}
}

func TestIsLoopback(t *testing.T) {
	cases := []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:7878", true}, {"127.9.9.9:1", true}, {"[::1]:7878", true}, {"localhost:7878", true},
		{":7878", false}, {"0.0.0.0:7878", false}, {"[::]:7878", false}, {"10.0.0.1:7878", false},
		{"example.com:7878", false}, {"nonsense", false},
	}
	for _, tc := range cases {
		t.Run(tc.listen, func(t *testing.T) {
			if got := IsLoopback(tc.listen); got != tc.want {
				t.Fatalf("IsLoopback(%q) = %v", tc.listen, got)
			}
		})
	}
}

func TestCheckServe(t *testing.T) {
	token := "tenants:\n  - name: a\n    token_hashes: [\"" + auth.HashToken("t") + "\"]\n"
	cases := []struct {
		name string
		yaml string
		auth bool
		want string
	}{
		{"loopback, no auth", "listen: 127.0.0.1:1\n", false, ""},
		{"all interfaces, no tenants", "listen: \":1\"\n", true, "no tenant"},
		{"all interfaces, auth off", "listen: \":1\"\nauth: {enabled: false}\n", false, "not loopback"},
		{"all interfaces, insecure", "listen: \":1\"\nauth: {insecure_no_auth: true}\n", false, ""},
		{"insecure wins over enabled", "listen: \":1\"\nauth: {enabled: true, insecure_no_auth: true}\n", false, ""},
		{"all interfaces, tenants", "listen: \":1\"\n" + token, true, ""},
		{"loopback, auth on, no tenants", "listen: 127.0.0.1:1\nauth: {enabled: true}\n", true, "no tenant"},
		{"loopback, auth on, tenants", "listen: 127.0.0.1:1\nauth: {enabled: true}\n" + token, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if c.AuthEnabled() != tc.auth {
				t.Fatalf("AuthEnabled = %v", c.AuthEnabled())
			}
			err = c.CheckServe()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServingErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"log level", "logging: {level: loud}\n", "logging.level"},
		{"log format", "logging: {format: xml}\n", "logging.format"},
		{"admission concurrency", "admission: {max_concurrent: 0}\n", "max_concurrent"},
		{"admission queue", "admission: {max_queue: -1}\n", "max_queue"},
		{"admission wait", "admission: {max_wait: -1s}\n", "max_wait"},
		{"metrics listen", "metrics: {listen: nowhere}\n", "metrics.listen"},
		{"cert without key", "tls: {cert_file: a.pem}\n", "go together"},
		{"client ca without cert", "tls: {client_ca_file: ca.pem}\n", "client_ca_file needs"},
		{"require without ca", "tls: {cert_file: a, key_file: b, require_client_cert: true}\n", "require_client_cert needs"},
		{"recv size", "grpc: {max_recv_bytes: 0}\n", "max_recv_bytes"},
		{"keepalive", "grpc: {keepalive: {time: -1s}}\n", "keepalive"},
		{"tenant without name", "tenants:\n  - tools: [x]\n", "name is required"},
		{"plain token", "tenants:\n  - name: a\n    token_hashes: [hunter2]\n", "never the token"},
		{"identity without ca", "tenants:\n  - name: a\n    client_identities: [x]\n", "client_ca_file is not set"},
		{"unknown tenant key", "tenants:\n  - name: a\n    tokens: [x]\n", "tokens"},
		{"workers mode", "workers: {mode: fast}\n", "workers.mode"},
		{"workers max", "workers: {max: 0}\n", "executions_per_worker"},
		{"workers unknown key", "workers: {count: 3}\n", "count"},
		{"workers in-process without acknowledgement", "workers: {mode: inprocess}\n", "workers.insecure_inprocess: true"},
		{"workers in-process acknowledged false", "workers: {mode: inprocess, insecure_inprocess: false}\n", "not a sandbox"},
		{"workers idle timeout", "workers: {idle_timeout: -1s}\n", "idle_timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ptcd.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(Options{File: path, LookupEnv: env(nil)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServingFlagsAndEnv(t *testing.T) {
	e := map[string]string{"PTC_ADMISSION_MAX_CONCURRENT": "3", "PTC_AUTH_ENABLED": "false", "PTC_METRICS_LISTEN": ""}
	c, err := Load(Options{LookupEnv: env(e), Overrides: map[string]string{"grpc.keepalive.max_connection_age": "1m", "tls.require_client_cert": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Admission.MaxConcurrent != 3 || c.Auth.Enabled == nil || *c.Auth.Enabled || c.Metrics.Listen != "" || c.GRPC.Keepalive.MaxConnectionAge != Duration(time.Minute) {
		t.Fatalf("%+v", c)
	}
	if _, err := Load(Options{LookupEnv: env(map[string]string{"PTC_AUTH_ENABLED": "maybe"})}); err == nil {
		t.Fatal("a bad boolean was accepted")
	}
	if _, err := Load(Options{LookupEnv: env(map[string]string{"PTC_ADMISSION_MAX_QUEUE": "many"})}); err == nil {
		t.Fatal("a bad integer was accepted")
	}
}

func TestServingPrintRoundTrip(t *testing.T) {
	c, err := Load(Options{File: "testdata/serving.yaml", LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := c.Print(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Parse([]byte(buf.String()))
	if err != nil {
		t.Fatalf("printout does not parse: %v\n%s", err, buf.String())
	}
	if back.Auth.Enabled == nil || !*back.Auth.Enabled || len(back.Tenants) != 2 || back.Tenants[0].Rate != 20 ||
		back.TLS != c.TLS || back.GRPC != c.GRPC || back.Admission != c.Admission {
		t.Fatalf("round trip changed the configuration:\n%s", buf.String())
	}
}
