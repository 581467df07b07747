package config

import (
	"strings"
	"testing"
)

// TestTracingSection: tracing is off by default; every bad value is a
// start-up error that names the key.
func TestTracingSection(t *testing.T) {
	if c := Default(); c.Tracing.Enabled() || c.Tracing.SamplingRatio != 1 || c.Tracing.Protocol != "grpc" {
		t.Fatalf("default tracing %+v", c.Tracing)
	}
	cases := []struct {
		name, yaml, err string
	}{
		{"grpc endpoint", "tracing: {endpoint: 127.0.0.1:4317, insecure: true, sampling_ratio: 0.25}", ""},
		{"http url", "tracing: {endpoint: \"https://otel.example.com/v1/traces\", protocol: http}", ""},
		{"ratio as a string", "tracing: {endpoint: 127.0.0.1:4317, sampling_ratio: \"0.5\"}", ""},
		{"ratio 0 samples nothing", "tracing: {endpoint: 127.0.0.1:4317, sampling_ratio: 0}", ""},
		{"headers name variables", "tracing: {endpoint: 127.0.0.1:4317, headers_from_env: {x-api-key: OTLP_KEY}}", ""},
		{"ratio above 1", "tracing: {endpoint: 127.0.0.1:4317, sampling_ratio: 1.5}", "tracing.sampling_ratio: 1.5 is out of range: use a number from 0 (no traces) to 1"},
		{"negative ratio", "tracing: {sampling_ratio: -0.1}", "tracing.sampling_ratio: -0.1 is out of range"},
		{"ratio not a number", "tracing: {sampling_ratio: lots}", `"lots" is not a number: write a ratio from 0 to 1`},
		{"unknown protocol", "tracing: {endpoint: 127.0.0.1:4317, protocol: zipkin}", `tracing.protocol: "zipkin" is not a protocol: use grpc or http`},
		{"endpoint without port", "tracing: {endpoint: collector}", `tracing.endpoint: "collector" is not host:port`},
		{"endpoint with another scheme", "tracing: {endpoint: \"ftp://collector:21\"}", `tracing.endpoint: "ftp://collector:21" is not a URL with http:// or https://`},
		{"secret pasted as a header", "tracing: {endpoint: 127.0.0.1:4317, headers_from_env: {x-api-key: \"abc 123\"}}", "tracing.headers_from_env.x-api-key must name an environment variable"},
		{"unknown key", "tracing: {endpont: 127.0.0.1:4317}", `tracing.endpont: unknown key "endpont" (did you mean endpoint?)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if tc.err == "" {
				if err != nil || !c.Tracing.Enabled() {
					t.Fatalf("err %v, tracing %+v", err, c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestTracingFromEnvironment(t *testing.T) {
	env := map[string]string{"PTC_TRACING_ENDPOINT": "127.0.0.1:4317", "PTC_TRACING_SAMPLING_RATIO": "0.1", "OTLP_KEY": "k"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := Load(Options{LookupEnv: lookup})
	if err != nil || c.Tracing.Endpoint != "127.0.0.1:4317" || c.Tracing.SamplingRatio != 0.1 {
		t.Fatalf("%v %+v", err, c.Tracing)
	}
	env["PTC_TRACING_SAMPLING_RATIO"] = "2"
	if _, err := Load(Options{LookupEnv: lookup}); err == nil || !strings.Contains(err.Error(), "tracing.sampling_ratio (environment variable PTC_TRACING_SAMPLING_RATIO): 2 is out of range") {
		t.Fatalf("err = %v", err)
	}
	c.Tracing.HeadersFromEnv = map[string]string{"x-api-key": "OTLP_KEY", "x-other": "MISSING"}
	if _, err := c.TracingHeaders(lookup); err == nil || !strings.Contains(err.Error(), "environment variable MISSING") {
		t.Fatalf("err = %v", err)
	}
}
