package config

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Tracing is the tracing section: OpenTelemetry spans exported over OTLP.
// Tracing is off while Endpoint is empty.
type Tracing struct {
	// Endpoint is the OTLP collector: host:port, or a URL
	// (http://collector:4318/v1/traces for protocol http). Empty turns
	// tracing off.
	Endpoint string `yaml:"endpoint"`
	// Protocol is grpc (OTLP/gRPC, usually port 4317) or http
	// (OTLP/HTTP with protobuf, usually port 4318).
	Protocol string `yaml:"protocol"`
	// Insecure sends spans in plaintext (a collector on loopback or a
	// sidecar); otherwise TLS. An http:// endpoint URL is plaintext too.
	Insecure bool `yaml:"insecure"`
	// HeadersFromEnv maps a header of every export request to the
	// environment variable holding its value (e.g. an API key).
	HeadersFromEnv map[string]string `yaml:"headers_from_env,omitempty"`
	// SamplingRatio is the share of traces recorded, from 0 to 1; a caller
	// that sends W3C trace context decides for its own traces.
	SamplingRatio Ratio `yaml:"sampling_ratio"`
	// ServiceName is the service.name of the spans.
	ServiceName string `yaml:"service_name"`
	// RecordValues puts tool arguments, results and error messages (cut at
	// 4 KiB) into spans. Off by default: they are the callers' data.
	RecordValues bool `yaml:"record_values"`
}

// Enabled reports whether tracing is on.
func (t Tracing) Enabled() bool { return t.Endpoint != "" }

// Ratio is a number from 0 to 1.
type Ratio float64

// UnmarshalYAML reads a number (or a string holding one).
func (r *Ratio) UnmarshalYAML(node ast.Node) error {
	switch v := scalar(node).(type) {
	case float64:
		*r = Ratio(v)
	case uint64:
		*r = Ratio(v)
	case int64:
		*r = Ratio(v)
	case string:
		if err := r.Set(v); err != nil {
			return &nodeError{node, err.Error()}
		}
	default:
		return &nodeError{node, fmt.Sprintf("%s is not a number: write a ratio from 0 to 1, e.g. 0.1", valueName(node))}
	}
	return nil
}

// MarshalYAML writes the ratio as a number.
func (r Ratio) MarshalYAML() (any, error) { return float64(r), nil }

// Set parses a number; it implements flag.Value. The range is checked by
// Validate, which names the key.
func (r *Ratio) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number: write a ratio from 0 to 1, e.g. 0.1", s)
	}
	*r = Ratio(f)
	return nil
}

// String formats the ratio; it implements flag.Value.
func (r Ratio) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) }

func defaultTracing(c *Config) {
	c.Tracing = Tracing{Protocol: "grpc", SamplingRatio: 1, ServiceName: "ptcd"}
}

func tracingSettings() []setting {
	return []setting{
		{"tracing.endpoint", "OTLP collector of spans: host:port or URL (\"\" = tracing off)", func(c *Config) flag.Value { return stringValue{&c.Tracing.Endpoint} }},
		{"tracing.protocol", "OTLP protocol: grpc or http", func(c *Config) flag.Value { return stringValue{&c.Tracing.Protocol} }},
		{"tracing.insecure", "send spans in plaintext", func(c *Config) flag.Value { return boolValue{&c.Tracing.Insecure} }},
		{"tracing.sampling_ratio", "share of traces recorded, 0 to 1", func(c *Config) flag.Value { return &c.Tracing.SamplingRatio }},
		{"tracing.service_name", "service.name of the spans", func(c *Config) flag.Value { return stringValue{&c.Tracing.ServiceName} }},
		{"tracing.record_values", "put tool arguments, results and error messages into spans", func(c *Config) flag.Value { return boolValue{&c.Tracing.RecordValues} }},
	}
}

// validateTracing checks the tracing section.
func (c *Config) validateTracing() *Error {
	t := c.Tracing
	r := float64(t.SamplingRatio)
	if !(r >= 0 && r <= 1) {
		return keyError("tracing.sampling_ratio", "%s is out of range: use a number from 0 (no traces) to 1 (every trace), e.g. 0.1", t.SamplingRatio)
	}
	switch t.Protocol {
	case "grpc", "http":
	default:
		return keyError("tracing.protocol", "%q is not a protocol: use grpc or http", t.Protocol)
	}
	if err := checkEnvNames("tracing.headers_from_env", t.HeadersFromEnv); err != nil {
		return err
	}
	if t.Endpoint == "" {
		return nil
	}
	if t.ServiceName == "" {
		return keyError("tracing.service_name", "is empty: name the service (default ptcd)")
	}
	if strings.Contains(t.Endpoint, "://") {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return keyError("tracing.endpoint", "%q is not a URL with http:// or https:// and a host, nor host:port", t.Endpoint)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(t.Endpoint); err != nil {
		return keyError("tracing.endpoint", "%q is not host:port (e.g. \"127.0.0.1:4317\") nor a URL", t.Endpoint)
	}
	return nil
}

// TracingHeaders resolves the tracing headers from the environment; a
// variable that is not set is an error naming it.
func (c *Config) TracingHeaders(lookupEnv func(string) (string, bool)) (map[string]string, error) {
	return resolveHeaders("tracing.headers_from_env", c.Tracing.HeadersFromEnv, lookupEnv)
}
