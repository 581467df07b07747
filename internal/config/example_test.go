package config_test

import (
	"flag"
	"fmt"
	"github.com/ptcrun/ptc/internal/limits"
	"os"

	"github.com/ptcrun/ptc/internal/config"
)

func ExampleLoad() {
	// In ptcd's main: define the config flags beside its own, parse, load.
	fs := flag.NewFlagSet("ptcd", flag.ContinueOnError)
	file := fs.String("config", "", "configuration file")
	config.DefineFlags(fs)
	_ = fs.Parse([]string{"-config", "testdata/layers.yaml", "-listen", "127.0.0.1:8080"})

	env := map[string]string{"PTC_LIMITS_DEFAULTS_TIMEOUT": "45s"}
	c, err := config.Load(config.Options{
		File:      *file,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Flags:     fs,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Listen, c.Limits.Defaults.Timeout, limits.FormatBytes(c.Limits.Defaults.MemoryBytes), c.DemoTools)
	// Output: 127.0.0.1:8080 45s 128MiB true
}

func ExampleConfig_Print() {
	c, err := config.Parse([]byte(`
tool_sources:
  - name: github
    type: mcp_http
    url: https://example.com/mcp
    headers_from_env: {Authorization: GITHUB_AUTH}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The printout names GITHUB_AUTH, never its value.
	_ = c.Print(os.Stdout)
	// Output:
	// listen: 127.0.0.1:7878
	// limits:
	//   defaults:
	//     timeout: 30s
	//     cpu_time: 10s
	//     memory_bytes: 256MiB
	//     max_tool_calls: 1000
	//     max_concurrent_tool_calls: 16
	//     max_output_bytes: 1MiB
	//     max_log_bytes: 64KiB
	//     max_log_entries: 1000
	//     max_result_tokens: 1048576
	//     max_pauses: 20
	//     max_paused_time: 24h0m0s
	//   ceilings:
	//     timeout: 5m0s
	//     cpu_time: 2m0s
	//     memory_bytes: 2GiB
	//     max_tool_calls: 100000
	//     max_concurrent_tool_calls: 256
	//     max_output_bytes: 16MiB
	//     max_log_bytes: 4MiB
	//     max_log_entries: 100000
	//     max_result_tokens: 16777216
	//     max_pauses: 1000
	//     max_paused_time: 720h0m0s
	// tool_sources:
	//   - name: github
	//     type: mcp_http
	//     required: true
	//     url: https://example.com/mcp
	//     headers_from_env:
	//       Authorization: GITHUB_AUTH
	// demo_tools: false
	// shutdown_grace: 15s
	// logging:
	//   level: info
	//   format: auto
	// auth:
	//   insecure_no_auth: false
	// admission:
	//   max_concurrent: 64
	//   max_queue: 256
	//   max_wait: 10s
	// metrics:
	//   listen: 127.0.0.1:9090
	// grpc:
	//   max_recv_bytes: 25MiB
	//   max_send_bytes: 64MiB
	//   max_concurrent_streams: 1000
	//   max_header_list_bytes: 16KiB
	//   max_pending_streams: 1024
	//   max_pending_streams_per_tenant: 512
	//   first_message_timeout: 20s
	//   connection_timeout: 10s
	//   max_connections: 1024
	//   max_connections_per_peer: 64
	//   keepalive:
	//     min_time: 10s
	//     permit_without_stream: true
	//     time: 1m0s
	//     timeout: 20s
	//     max_connection_idle: 5m0s
	//     max_connection_age: 0s
	//     max_connection_age_grace: 0s
	// tracing:
	//   endpoint: ""
	//   protocol: grpc
	//   insecure: false
	//   sampling_ratio: 1.0
	//   service_name: ptcd
	//   record_values: false
	// mcp:
	//   listen: ""
	//   path: /mcp
	//   session_timeout: 30m0s
	//   description_bytes: 16KiB
	//   max_sessions_per_tenant: 100
	//   max_sessions: 1000
	//   idle_timeout: 1m0s
	//   read_header_timeout: 10s
	//   max_header_bytes: 64KiB
	//   body_read_timeout: 30s
	//   max_body_bytes_in_flight: 64MiB
	//   write_timeout: 30s
	//   max_connections: 1024
	//   max_connections_per_peer: 64
	// workers:
	//   mode: worker
	//   insecure_inprocess: false
	//   idle: 2
	//   idle_timeout: 30s
	//   max: 64
	//   executions_per_worker: 1
	//   recycle_after: 1000
	// wasm:
	//   compile_timeout: 1m0s
	//   max_concurrent_compiles: 2
	//   compile_memory: 1GiB
	//   cache_bytes: 512MiB
	//   max_functions: 100000
	//   max_function_bytes: 4MiB
	//   max_nesting: 2000
	//   max_branch_targets: 10000
	//   max_data_segments: 500000
	// python:
	//   interpreter: ""
	//   sha256: ""
	//   cache_dir: ""
	//   in_supervisor: false
	//   warm: 2
	// durable:
	//   ttl: 24h0m0s
	//   max_token_bytes: 256KiB
	//   max_state_bytes: 64MiB
	//   max_bytes_per_tenant: 1GiB
	//   outcome_retention: 10m0s
	//   outcome_bytes: 64MiB
	//   parked:
	//     max: 64
	//     max_bytes: 256MiB
	//     max_age: 10m0s
	//   lease:
	//     ttl: 15s
	//     renew_every: 5s
	//     max_takeovers: 3
	// idempotency:
	//   retention: 10m0s
	//   max_entries: 10000
	//   max_bytes: 64MiB
	//   linger: 5s
}
