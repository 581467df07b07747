package config

import (
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
	if c.Metrics.Listen != DefaultMetricsListen || c.Admission.MaxConcurrent <= 0 || c.GRPC.MaxRecvBytes < 16<<20+8<<20 || c.Logging.Format != "auto" {
		t.Fatalf("%+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.AuthEnabled() {
		t.Fatal("auth must be off by default on the loopback default listener")
	}
	if c.MCP.Enabled() || c.MCP.Path != "/mcp" {
		t.Fatalf("mcp %+v: off by default, at /mcp", c.MCP)
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
		{"mcp on loopback too", "listen: 127.0.0.1:1\nmcp: {listen: \"127.0.0.1:2\"}\n", false, ""},
		{"mcp on all interfaces, no tenants", "listen: 127.0.0.1:1\nmcp: {listen: \":2\"}\n", true, "mcp.listen :2"},
		{"mcp on all interfaces, auth off", "listen: 127.0.0.1:1\nmcp: {listen: \":2\"}\nauth: {enabled: false}\n", false, "not loopback"},
		{"mcp on all interfaces, tenants", "listen: 127.0.0.1:1\nmcp: {listen: \":2\"}\n" + token, true, ""},
		{"mcp on all interfaces, insecure", "listen: 127.0.0.1:1\nmcp: {listen: \":2\"}\nauth: {insecure_no_auth: true}\n", false, ""},
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

func TestServingFlagsAndEnv(t *testing.T) {
	e := map[string]string{"PTC_ADMISSION_MAX_CONCURRENT": "3", "PTC_AUTH_ENABLED": "false", "PTC_METRICS_LISTEN": ""}
	c, err := Load(Options{LookupEnv: env(e), Overrides: map[string]string{"grpc.keepalive.max_connection_age": "1m", "tls.require_client_cert": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Admission.MaxConcurrent != 3 || c.Auth.Enabled == nil || *c.Auth.Enabled || c.Metrics.Listen != "" || c.GRPC.Keepalive.MaxConnectionAge != Duration(time.Minute) {
		t.Fatalf("%+v", c)
	}
	c, err = Load(Options{LookupEnv: env(map[string]string{"PTC_MCP_LISTEN": "127.0.0.1:0", "PTC_MCP_DESCRIPTION_BYTES": "4KiB"}),
		Overrides: map[string]string{"mcp.path": "/ptc/mcp", "mcp.session_timeout": "5m"}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.MCP.Enabled() || c.MCP.Listen != "127.0.0.1:0" || c.MCP.Path != "/ptc/mcp" || c.MCP.SessionTimeout != Duration(5*time.Minute) || c.MCP.DescriptionBytes != 4<<10 {
		t.Fatalf("mcp %+v", c.MCP)
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
