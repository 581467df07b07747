package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/auth"
)

// TestErrorMessages checks the whole text of every kind of configuration
// error: each names the key, where its value came from (the file's line
// and column, an environment variable, a flag), the value, and what to do;
// none has a doubled prefix or a Go type in it. FILE stands for the file.
func TestErrorMessages(t *testing.T) {
	hash := auth.HashToken("a long enough token")
	cases := []struct {
		name  string
		yaml  string
		env   map[string]string
		flags []string
		want  string
	}{
		// The file as a whole.
		{"syntax", "listen: \"unterminated\n", nil, nil, `config: FILE:1:9: could not find end character of double-quoted text`},
		{"not a mapping", "hello\n", nil, nil, `config: FILE:1:1: the file must hold a mapping of keys (listen: ..., limits: ...), not a string`},
		{"two documents", "listen: \":1\"\n---\nlisten: \":2\"\n", nil, nil, `config: FILE:3:1: a second YAML document starts here: keep one document in the file`},
		{"key set twice", "listen: a\nlisten: b\n", nil, nil, `config: FILE:2:1: listen is set twice (first at line 1): keep one`},
		{"limit set twice", "limits:\n  defaults:\n    timeout: 1s\n    timeout: 2s\n", nil, nil, `config: FILE:4:5: limits.defaults.timeout is set twice (first at line 3): keep one`},

		// Unknown keys, at every level, with the keys allowed there.
		{"unknown top-level key", "listn: \":1\"\n", nil, nil, `config: FILE:1:1: listn: unknown key "listn" (did you mean listen?): the keys here are listen, limits, tool_sources, demo_tools, shutdown_grace, logging, auth, tenants, admission, metrics, tls, grpc, tracing, mcp, workers, wasm, python, durable, idempotency, approvals`},
		{"unknown limit", "limits:\n  defaults:\n    timeot: 1s\n", nil, nil, `config: FILE:3:5: limits.defaults.timeot: unknown key "timeot" (did you mean timeout?): the keys here are timeout, cpu_time, memory_bytes, max_tool_calls, max_concurrent_tool_calls, max_output_bytes, max_log_bytes, max_log_entries, max_result_tokens, max_pauses, max_paused_time`},
		{"unknown section key", "logging:\n  levl: x\n", nil, nil, `config: FILE:2:3: logging.levl: unknown key "levl" (did you mean level?): the keys here are level, format`},
		{"unknown source key", "tool_sources:\n  - name: a\n    type: mcp_stdio\n    comand: x\n", nil, nil, `config: FILE:4:5: tool_sources[0].comand: unknown key "comand" (did you mean command?): the keys here are name, type, required, command, args, dir, env, env_from_env, url, headers_from_env, allow, deny, connect_timeout, policy, approval, tools`},
		{"unknown policy key", "tool_sources:\n  - {name: a, type: mcp_stdio, command: x, policy: {retris: 2}}\n", nil, nil, `config: FILE:2:53: tool_sources[0].policy.retris: unknown key "retris" (did you mean retries?): the keys here are timeout, retries, backoff_base, backoff_max, max_calls_per_execution, max_concurrent`},
		{"unknown tenant key", "tenants:\n  - name: a\n    tokens: [x]\n", nil, nil, `config: FILE:3:5: tenants[0].tokens: unknown key "tokens": the keys here are name, token_hashes, client_identities, tools, ceilings, max_concurrent, rate, burst`},
		{"unknown workers key", "workers: {count: 3}\n", nil, nil, `config: FILE:1:11: workers.count: unknown key "count": the keys here are mode, insecure_inprocess, idle, idle_timeout, max, executions_per_worker, recycle_after`},

		// Values of the wrong kind.
		{"list for a string", "listen: [1]\n", nil, nil, `config: FILE:1:9: listen: want a string, not a list`},
		{"word for a bool", "demo_tools: yes please\n", nil, nil, `config: FILE:1:13: demo_tools: want true or false, not "yes please"`},
		{"word for an integer", "admission: {max_concurrent: many}\n", nil, nil, `config: FILE:1:29: admission.max_concurrent: want an integer, not "many"`},
		{"word for a number", "tenants:\n  - name: a\n    rate: fast\n", nil, nil, `config: FILE:3:11: tenants[0].rate: want a number, not "fast"`},
		{"mapping for a list", "tool_sources: {name: x}\n", nil, nil, `config: FILE:1:15: tool_sources: want a list, not a mapping`},
		{"number for a section", "limits: 5\n", nil, nil, `config: FILE:1:9: limits: want a mapping, not an integer`},
		{"list for limits", "limits:\n  defaults: [1]\n", nil, nil, `config: FILE:2:13: limits.defaults: want a mapping of limits (timeout: 30s, ...), not a list`},
		{"list for a limit", "limits:\n  defaults:\n    timeout: [1]\n", nil, nil, `config: FILE:3:14: limits.defaults.timeout: want a duration, not a list`},
		{"integer too large", "admission:\n  max_concurrent: 99999999999999999999\n", nil, nil, `config: FILE:2:19: admission.max_concurrent: 99999999999999999999 is too large for an integer`},

		// Durations and sizes.
		{"duration without unit", "shutdown_grace: 10\n", nil, nil, `config: FILE:1:17: shutdown_grace: duration 10 has no unit: write e.g. "10s" or "10m"`},
		{"bad duration", "admission: {max_wait: soon}\n", nil, nil, `config: FILE:1:23: admission.max_wait: duration "soon" is invalid: write e.g. "30s", "5m" or "1h30m"`},
		{"limit without unit", "limits:\n  defaults:\n    timeout: 10\n", nil, nil, `config: FILE:3:14: limits.defaults.timeout: duration 10 has no unit: write e.g. "10s" or "10m"`},
		{"bad size", "limits:\n  defaults:\n    memory_bytes: 12 parsecs\n", nil, nil, `config: FILE:3:19: limits.defaults.memory_bytes: size "12 parsecs" is invalid: write an integer or e.g. "64MiB"`},
		{"bad grpc size", "grpc:\n  max_recv_bytes: lots\n", nil, nil, `config: FILE:2:19: grpc.max_recv_bytes: size "lots" is invalid: write an integer or e.g. "64MiB"`},
		{"fractional count", "limits:\n  defaults:\n    max_tool_calls: 1.5\n", nil, nil, `config: FILE:3:21: limits.defaults.max_tool_calls: "1.5" is not an integer`},
		{"count too large", "limits:\n  defaults:\n    max_tool_calls: 99999999999\n", nil, nil, `config: FILE:3:21: limits.defaults.max_tool_calls: "99999999999" is too large (at most 2147483647)`},

		// Limits: both values and the fix.
		{"default above ceiling", "limits:\n  defaults:\n    timeout: 10m\n", nil, nil, `config: FILE:3:14: limits.defaults.timeout: 10m0s is above its ceiling limits.ceilings.timeout (5m0s): lower the default or raise the ceiling`},
		{"ceiling below default", "limits:\n  ceilings:\n    timeout: 10s\n", nil, nil, `config: FILE: limits.defaults.timeout: 30s is above its ceiling limits.ceilings.timeout (10s): lower the default or raise the ceiling`},
		{"negative limit", "limits:\n  defaults:\n    max_tool_calls: -1\n", nil, nil, `config: FILE:3:21: limits.defaults.max_tool_calls: -1 is negative: use 0 for the built-in value or a positive count`},
		{"default from env above ceiling", "", map[string]string{"PTC_LIMITS_DEFAULTS_TIMEOUT": "10m"}, nil, `config: limits.defaults.timeout (environment variable PTC_LIMITS_DEFAULTS_TIMEOUT): 10m0s is above its ceiling limits.ceilings.timeout (5m0s): lower the default or raise the ceiling`},
		{"default from flag above ceiling", "limits:\n  defaults:\n    timeout: 1m\n", nil, []string{"-limits.defaults.timeout", "10m"}, `config: limits.defaults.timeout (flag -limits.defaults.timeout): 10m0s is above its ceiling limits.ceilings.timeout (5m0s): lower the default or raise the ceiling`},

		// The environment and flags.
		{"bad env duration", "", map[string]string{"PTC_LIMITS_DEFAULTS_TIMEOUT": "soon"}, nil, `config: limits.defaults.timeout (environment variable PTC_LIMITS_DEFAULTS_TIMEOUT): duration "soon" is invalid: write e.g. "30s" or "5m"`},
		{"bad env bool", "", map[string]string{"PTC_DEMO_TOOLS": "yes please"}, nil, `config: demo_tools (environment variable PTC_DEMO_TOOLS): "yes please" is not a boolean: use true or false`},
		{"bad env integer", "", map[string]string{"PTC_ADMISSION_MAX_QUEUE": "many"}, nil, `config: admission.max_queue (environment variable PTC_ADMISSION_MAX_QUEUE): "many" is not an integer`},
		{"bad flag duration", "", nil, []string{"-shutdown-grace", "10"}, `config: shutdown_grace (flag -shutdown-grace): duration "10" has no unit: write e.g. "10s" or "10m"`},
		{"bad value from env, named", "listen: 127.0.0.1:1\n", map[string]string{"PTC_LISTEN": "nowhere"}, nil, `config: listen (environment variable PTC_LISTEN): "nowhere" is not host:port: write e.g. "127.0.0.1:7878" or ":7878"`},

		// Top-level and serving keys.
		{"bad listen", "listen: nowhere\n", nil, nil, `config: FILE:1:9: listen: "nowhere" is not host:port: write e.g. "127.0.0.1:7878" or ":7878"`},
		{"negative grace", "shutdown_grace: -1s\n", nil, nil, `config: FILE:1:17: shutdown_grace: -1s is negative: use a duration such as "15s"`},
		{"log level", "logging: {level: loud}\n", nil, nil, `config: FILE:1:18: logging.level: "loud" is not a level: use debug, info, warn or error`},
		{"log format", "logging: {format: xml}\n", nil, nil, `config: FILE:1:19: logging.format: "xml" is not a format: use auto (text on a terminal, JSON otherwise), json or text`},
		{"admission concurrency", "admission: {max_concurrent: 0}\n", nil, nil, `config: FILE:1:29: admission.max_concurrent: 0 is not positive: allow at least 1 execution at once (the default is 64)`},
		{"admission queue", "admission: {max_queue: -1}\n", nil, nil, `config: FILE:1:24: admission.max_queue: -1 is negative: use 0 to refuse a request at once when every slot is busy, or more`},
		{"admission wait", "admission: {max_wait: -1s}\n", nil, nil, `config: FILE:1:23: admission.max_wait: -1s is negative: use a duration such as "10s"`},
		{"metrics listen", "metrics: {listen: nowhere}\n", nil, nil, `config: FILE:1:19: metrics.listen: "nowhere" is not host:port: write e.g. "127.0.0.1:9090", or "" to turn metrics off`},
		{"recv size", "grpc: {max_recv_bytes: 0}\n", nil, nil, `config: FILE:1:24: grpc.max_recv_bytes: 0 is out of range: use a size above 0 and below 2GiB`},
		{"keepalive", "grpc: {keepalive: {time: -1s}}\n", nil, nil, `config: FILE:1:26: grpc.keepalive.time: -1s is negative: use 0 or a positive duration`},
		{"cert without key", "tls: {cert_file: a.pem}\n", nil, nil, `config: FILE: tls.key_file is not set but tls.cert_file is: set both (TLS) or neither (plaintext)`},
		{"client ca without cert", "tls: {client_ca_file: ca.pem}\n", nil, nil, `config: FILE:1:23: tls.client_ca_file needs tls.cert_file and tls.key_file: mTLS runs over TLS`},
		{"require without ca", "tls: {cert_file: a, key_file: b, require_client_cert: true}\n", nil, nil, `config: FILE:1:55: tls.require_client_cert needs tls.client_ca_file to verify the certificates`},
		{"workers mode", "workers: {mode: fast}\n", nil, nil, `config: FILE:1:17: workers.mode: "fast" is not a mode: use worker (isolated processes) or inprocess`},
		{"workers max", "workers: {max: 0}\n", nil, nil, `config: FILE:1:16: workers.max: 0 is below 1: allow at least one worker process`},
		{"workers in-process without acknowledgement", "workers: {mode: inprocess}\n", nil, nil, `config: FILE:1:17: workers.mode: inprocess runs scripts inside ptcd itself: no process isolation, no OS memory limit, and ptcd's own files, network and memory within reach of any engine bug — not a sandbox for untrusted scripts. Use mode worker (the default), or, if every script is trusted, also set workers.insecure_inprocess: true (PTC_WORKERS_INSECURE_INPROCESS=true, -workers.insecure-inprocess)`},
		{"workers in-process acknowledged false", "workers: {mode: inprocess, insecure_inprocess: false}\n", nil, nil, `config: FILE:1:17: workers.mode: inprocess runs scripts inside ptcd itself: no process isolation, no OS memory limit, and ptcd's own files, network and memory within reach of any engine bug — not a sandbox for untrusted scripts. Use mode worker (the default), or, if every script is trusted, also set workers.insecure_inprocess: true (PTC_WORKERS_INSECURE_INPROCESS=true, -workers.insecure-inprocess)`},
		{"workers idle timeout", "workers: {idle_timeout: -1s}\n", nil, nil, `config: FILE:1:25: workers.idle_timeout: -1s is negative: use a duration such as "30s"`},
		{"python warm negative", "python: {warm: -1}\n", nil, nil, `config: FILE:1:16: python.warm: -1 is not between 0 and 64: give the number of interpreters to keep started (0 for none)`},
		{"python warm over the bound", "python: {warm: 65}\n", nil, nil, `config: FILE:1:16: python.warm: 65 is not between 0 and 64: give the number of interpreters to keep started (0 for none)`},
		{"mcp listen", "mcp: {listen: nowhere}\n", nil, nil, `config: FILE:1:15: mcp.listen: "nowhere" is not host:port: write e.g. "127.0.0.1:7879", or "" to turn MCP off`},
		{"mcp path", "mcp: {path: a/../mcp}\n", nil, nil, `config: FILE:1:13: mcp.path: "a/../mcp" is not a clean absolute path: write e.g. "/mcp"`},
		{"mcp session timeout", "mcp: {session_timeout: 0s}\n", nil, nil, `config: FILE:1:24: mcp.session_timeout: 0s is not positive: use a duration such as "30m"`},
		{"mcp description bytes", "mcp: {description_bytes: -1}\n", nil, nil, `config: FILE:1:26: mcp.description_bytes: -1 is negative: use a size such as "16KiB", or 0 to never declare the tools there`},
		{"mcp unknown key", "mcp: {port: 7879}\n", nil, nil, `config: FILE:1:7: mcp.port: unknown key "port": the keys here are listen, path, session_timeout, description_bytes, max_sessions_per_tenant, max_sessions, idle_timeout, read_header_timeout, max_header_bytes, body_read_timeout, max_body_bytes_in_flight, write_timeout, max_connections, max_connections_per_peer`},
		{"mcp idle timeout", "mcp: {idle_timeout: 0s}\n", nil, nil, `config: FILE:1:21: mcp.idle_timeout: 0s is not positive: use a duration such as "1m"`},
		{"mcp header bytes", "mcp: {max_header_bytes: 0}\n", nil, nil, `config: FILE:1:25: mcp.max_header_bytes: 0 is out of range: use a size above 0 and at most 1GiB, such as "64KiB"`},
		{"mcp body read timeout", "mcp: {body_read_timeout: 0s}\n", nil, nil, `config: FILE:1:26: mcp.body_read_timeout: 0s is not positive: use a duration such as "30s"`},
		{"mcp body bytes in flight", "mcp: {max_body_bytes_in_flight: 1MiB}\n", nil, nil, `config: FILE:1:33: mcp.max_body_bytes_in_flight: 1MiB is out of range: use a size of at least 16MiB (the largest request) and at most 1TiB, such as "64MiB"`},
		{"mcp write timeout", "mcp: {write_timeout: -1s}\n", nil, nil, `config: FILE:1:22: mcp.write_timeout: -1s is not positive: use a duration such as "30s"`},
		{"mcp connections per peer", "mcp: {max_connections_per_peer: 0}\n", nil, nil, `config: FILE:1:33: mcp.max_connections_per_peer: 0 is not positive: use a count such as 64`},
		{"grpc streams", "grpc: {max_concurrent_streams: 0}\n", nil, nil, `config: FILE:1:32: grpc.max_concurrent_streams: 0 is not positive: use a count (see docs/config.md for the default)`},
		{"grpc header list", "grpc: {max_header_list_bytes: 2GiB}\n", nil, nil, `config: FILE:1:31: grpc.max_header_list_bytes: 2GiB is out of range: use a size above 0 and at most 1GiB, such as "16KiB"`},
		{"grpc first message", "grpc: {first_message_timeout: 0s}\n", nil, nil, `config: FILE:1:31: grpc.first_message_timeout: 0s is not positive: use a duration such as "20s"`},
		{"grpc pending per tenant", "grpc: {max_pending_streams_per_tenant: 0}\n", nil, nil, `config: FILE:1:40: grpc.max_pending_streams_per_tenant: 0 is not positive: use a count (see docs/config.md for the default)`},
		{"grpc pending", "grpc: {max_pending_streams: -1}\n", nil, nil, `config: FILE:1:29: grpc.max_pending_streams: -1 is not positive: use a count (see docs/config.md for the default)`},
		{"mcp sessions per tenant", "mcp: {max_sessions_per_tenant: 0}\n", nil, nil, `config: FILE:1:32: mcp.max_sessions_per_tenant: 0 is not positive: use a count such as 100`},
		{"mcp sessions", "mcp: {max_sessions: -1}\n", nil, nil, `config: FILE:1:21: mcp.max_sessions: -1 is not positive: use a count such as 1000`},
		{"tracing ratio", "tracing: {endpoint: 127.0.0.1:4317, sampling_ratio: 1.5}\n", nil, nil, `config: FILE:1:53: tracing.sampling_ratio: 1.5 is out of range: use a number from 0 (no traces) to 1 (every trace), e.g. 0.1`},
		{"tracing ratio not a number", "tracing: {sampling_ratio: lots}\n", nil, nil, `config: FILE:1:27: tracing.sampling_ratio: "lots" is not a number: write a ratio from 0 to 1, e.g. 0.1`},
		{"tracing protocol", "tracing: {endpoint: 127.0.0.1:4317, protocol: zipkin}\n", nil, nil, `config: FILE:1:47: tracing.protocol: "zipkin" is not a protocol: use grpc or http`},

		// Durable executions and approvals.
		{"durable key id", "durable: {keys: [{id: \"\", secret_env: K}]}\n", nil, nil, `config: FILE:1:23: durable.keys[0].id: "" is not a key id: use 1 to 64 characters; continuations name the key that signed them`},
		{"durable key id twice", "durable:\n  keys:\n    - {id: a, secret_env: K1}\n    - {id: a, secret_env: K2}\n", nil, nil, `config: FILE:4:12: durable.keys[1].id: "a" is also the id of durable.keys[0]: give each key its own id`},
		{"durable secret in file", "durable:\n  keys:\n    - {id: a, secret_env: \"s3cret value\"}\n", nil, nil, `config: FILE:3:27: durable.keys[0].secret_env must name an environment variable (e.g. PTC_DURABLE_KEY_0), not hold the secret: secrets come only from the environment`},
		{"durable ttl", "durable: {ttl: 0s}\n", nil, nil, `config: FILE:1:16: durable.ttl: 0s is not positive: use a duration such as "24h"`},
		{"durable token cap", "durable: {max_token_bytes: 100}\n", nil, nil, `config: FILE:1:28: durable.max_token_bytes: 100 is below 1KiB: use a size such as 64KiB`},
		{"durable tenant bound", "durable: {max_bytes_per_tenant: 0}\n", nil, nil, `config: FILE:1:33: durable.max_bytes_per_tenant: 0 is not positive: use a size such as 1GiB (the paused states the store keeps for one tenant)`},
		{"durable total bound", "durable: {max_bytes: -1}\n", nil, nil, `config: FILE:1:22: durable.max_bytes: -1 is negative: use 0 for no bound beyond each tenant's, or a size such as 8GiB`},
		{"durable state below token", "durable: {max_token_bytes: 64KiB, max_state_bytes: 32KiB}\n", nil, nil, `config: FILE:1:52: durable.max_state_bytes: 32KiB is below durable.max_token_bytes (64KiB): a paused state in the store can be no smaller than one in a continuation`},
		{"durable outcome retention", "durable: {outcome_retention: 0s}\n", nil, nil, `config: FILE:1:30: durable.outcome_retention: 0s is not positive: use a duration such as "10m" (how long a Resume's outcome is kept for a retry)`},
		{"durable outcome bytes", "durable: {outcome_bytes: 0}\n", nil, nil, `config: FILE:1:26: durable.outcome_bytes: 0 is not positive: use a size such as 64MiB`},
		{"durable two stores", "durable:\n  store: {file: /tmp/d.db, redis_url_env: R}\n", nil, nil, `config: FILE:2:11: durable.store has file and redis_url_env: give one (file for one replica, Redis or PostgreSQL for several)`},
		{"durable redis and postgres", "durable:\n  store: {redis_url_env: R, postgres_dsn_file: /run/secrets/dsn}\n", nil, nil, `config: FILE:2:11: durable.store has redis_url_env and postgres_dsn_file: give one (file for one replica, Redis or PostgreSQL for several)`},
		{"durable postgres dsn in file", "durable:\n  store: {postgres_dsn_env: \"host=db password=x\"}\n", nil, nil, `config: FILE:2:29: durable.store.postgres_dsn_env must name an environment variable (e.g. PTC_POSTGRES_DSN), not hold the connection string: it may carry a password (or use postgres_dsn_file)`},
		{"durable redis url in file", "durable:\n  store: {redis_url_env: \"redis://h:6379\"}\n", nil, nil, `config: FILE:2:26: durable.store.redis_url_env must name an environment variable (e.g. PTC_REDIS_URL), not hold the URL: it may carry a password`},
		{"durable parked", "durable:\n  parked: {max: -1}\n", nil, nil, `config: FILE:2:17: durable.parked.max: -1 is negative: use 0 to keep no paused execution in memory, or more`},
		{"durable lease ttl", "durable:\n  lease: {ttl: 50ms}\n", nil, nil, `config: FILE:2:16: durable.lease.ttl: 50ms is below 100ms: use a duration such as "15s" (how long a retry waits before it takes over the resume of a replica that stopped)`},
		{"durable forward without redis", "durable:\n  forward: {advertise: \"10.0.0.1:50051\"}\n", nil, nil, `config: FILE:2:24: durable.forward.advertise needs a Redis store (durable.store.redis_url_env): replicas find the owner of a paused execution there`},
		{"durable forward not host:port", "durable:\n  store: {redis_url_env: R}\n  forward: {advertise: \"10.0.0.1\"}\n", nil, nil, `config: FILE:3:24: durable.forward.advertise: "10.0.0.1" is not host:port: give the address other replicas reach this one's gRPC listener at, e.g. 10.0.3.7:50051`},
		{"durable forward negative timeout", "durable:\n  store: {redis_url_env: R}\n  forward: {advertise: \"h:1\", timeout: -1s}\n", nil, nil, `config: FILE:3:40: durable.forward.timeout: -1s is negative: use a duration such as "5m"`},
		{"durable lease renewal", "durable:\n  lease: {ttl: 2s, renew_every: 2s}\n", nil, nil, `config: FILE:2:33: durable.lease.renew_every: 2s must be positive and shorter than durable.lease.ttl (2s): use about a third of it`},
		{"durable lease takeovers", "durable:\n  lease: {max_takeovers: -1}\n", nil, nil, `config: FILE:2:26: durable.lease.max_takeovers: -1 is negative: use 0 to take no resume over, or more`},
		{"idempotency retention", "idempotency: {retention: -1s}\n", nil, nil, `config: FILE:1:26: idempotency.retention: -1s is negative: use a duration such as "10m", or 0 to run every request even when it repeats an execution_id`},
		{"idempotency entries", "idempotency: {max_entries: 0}\n", nil, nil, `config: FILE:1:28: idempotency.max_entries: 0 is below 1: use a count such as 10000`},
		{"idempotency linger", "idempotency: {linger: -1s}\n", nil, nil, `config: FILE:1:23: idempotency.linger: -1s is negative: use a duration such as "5s", or 0 to cancel an Execute as soon as its last caller gives up`},
		{"idempotency bytes", "idempotency: {max_bytes: -1}\n", nil, nil, `config: FILE:1:26: idempotency.max_bytes: -1 is negative: use a size such as 64MiB`},
		{"approvals glob", "approvals: {tools: [\"[\"]}\n", nil, nil, `config: FILE:1:21: approvals.tools[0]: "[" is not a tool name or glob: use names or globs such as "crm.delete_*"`},
		{"source approval", "tool_sources:\n  - {name: a, type: mcp_stdio, command: x, approval: sometimes}\n", nil, nil, `config: FILE:2:54: tool_sources[0].approval: "sometimes" is not an approval policy: use none, all, not_read_only or destructive`},
		{"approval of an http source", "tool_sources:\n  - name: a\n    type: http\n    approval: all\n    tools: [{name: t, url: https://h/}]\n", nil, nil, `config: FILE:4:15: tool_sources[0].approval applies only to type mcp_stdio or mcp_http, and this source is http: remove it`},

		// Tenants.
		{"tenant without name", "tenants:\n  - tools: [x]\n", nil, nil, `config: FILE:2:5: tenants[0].name is required: name the tenant (it appears in logs and metrics)`},
		{"tenant name twice", "tenants:\n  - name: a\n  - name: a\n", nil, nil, `config: FILE:3:11: tenants[1].name: "a" is also the name of tenants[0]: give each tenant its own name`},
		{"plain token", "tenants:\n  - name: a\n    token_hashes: [hunter2]\n", nil, nil, "config: FILE:3:20: tenants[0].token_hashes[0]: \"hunt\"… is not a token hash: store the output of `ptcd hash-token` (sha256: followed by 64 hex digits), never the token itself"},
		{"short hash", "tenants:\n  - name: a\n    token_hashes: [\"sha256:abc\"]\n", nil, nil, "config: FILE:3:20: tenants[0].token_hashes[0] is not a token hash (token hash must have 64 hex digits after \"sha256:\", not 3): store the output of `ptcd hash-token`"},
		{"hash of two tenants", "tenants:\n  - name: a\n    token_hashes: [\"" + hash + "\"]\n  - name: b\n    token_hashes: [\"" + hash + "\"]\n", nil, nil, `config: FILE:5:20: tenants[1].token_hashes[0] is also a token hash of tenant a: give each tenant its own tokens`},
		{"identity without ca", "tenants:\n  - name: a\n    client_identities: [x]\n", nil, nil, `config: FILE:3:24: tenants[0].client_identities need tls.client_ca_file, which verifies client certificates: set it, or use token_hashes`},
		{"empty identity", "tenants:\n  - name: a\n    client_identities: [\"\"]\n", nil, nil, `config: FILE:3:25: tenants[0].client_identities[0] is empty: write a certificate's subject CN or URI SAN`},
		{"bad tool glob", "tenants:\n  - name: a\n    tools: [\"[\"]\n", nil, nil, `config: FILE:3:13: tenants[0].tools[0]: "[" is not a tool name or glob: use names or globs such as "crm.*"`},
		{"negative quota", "tenants:\n  - name: a\n    max_concurrent: -1\n", nil, nil, `config: FILE:3:21: tenants[0].max_concurrent: -1 is negative: use 0 for no quota`},
		{"negative tenant ceiling", "tenants:\n  - name: a\n    ceilings: {timeout: -1s}\n", nil, nil, `config: FILE:3:25: tenants[0].ceilings.timeout: -1s is negative: use 0 for the built-in value or a positive duration`},
		{"tenant ceiling above the server's", "tenants:\n  - name: a\n    ceilings:\n      timeout: 10m\n", nil, nil, `config: FILE:4:16: tenants[0].ceilings.timeout: 10m0s is above limits.ceilings.timeout (5m0s): a tenant's ceiling can only lower the server's; lower it or raise limits.ceilings.timeout`},

		// Tool sources.
		{"missing type", "tool_sources:\n  - name: a\n", nil, nil, `config: FILE:2:5: tool_sources[0].type is required: use mcp_stdio, mcp_http or http`},
		{"unknown type", "tool_sources:\n  - name: a\n    type: grpc\n", nil, nil, `config: FILE:3:11: tool_sources[0].type: "grpc" is not a source type: use mcp_stdio, mcp_http or http`},
		{"dotted name", "tool_sources:\n  - {name: a.b, type: mcp_stdio, command: x}\n", nil, nil, `config: FILE:2:12: tool_sources[0].name: "a.b" is not a source name: use letters, digits, _ and - (no dots); it is the first part of the source's tool names`},
		{"source name twice", "tool_sources:\n  - {name: a, type: mcp_stdio, command: x}\n  - {name: a, type: mcp_stdio, command: y}\n", nil, nil, `config: FILE:3:12: tool_sources[1].name: "a" is also the name of tool_sources[0]: give each source its own name`},
		{"stdio without command", "tool_sources:\n  - {name: a, type: mcp_stdio}\n", nil, nil, `config: FILE:2:6: tool_sources[0].command is required for type mcp_stdio: the program that serves MCP on its stdin and stdout`},
		{"http url", "tool_sources:\n  - {name: a, type: mcp_http, url: h.example}\n", nil, nil, `config: FILE:2:36: tool_sources[0].url: "h.example" must start with http:// or https://`},
		{"http without tools", "tool_sources:\n  - {name: a, type: http}\n", nil, nil, `config: FILE:2:6: tool_sources[0].tools is required for type http: list its endpoints`},
		{"key of another type", "tool_sources:\n  - name: a\n    type: mcp_http\n    url: https://h/\n    command: x\n", nil, nil, `config: FILE:5:14: tool_sources[0].command applies only to type mcp_stdio, and this source is mcp_http: remove it`},
		{"secret in file", "tool_sources:\n  - name: gh\n    type: mcp_http\n    url: https://h/mcp\n    headers_from_env:\n      Authorization: \"Bearer ghp_abc\"\n", nil, nil, `config: FILE:6:22: tool_sources[0].headers_from_env.Authorization must name an environment variable (e.g. GITHUB_AUTH), not hold the value: secrets come only from the environment`},
		{"bad env name", "tool_sources:\n  - name: a\n    type: mcp_stdio\n    command: x\n    env: {\"A B\": x}\n", nil, nil, `config: FILE:5:11: tool_sources[0].env: "A B" is not a valid variable name: use letters, digits and _`},
		{"bad policy", "tool_sources:\n  - name: a\n    type: mcp_stdio\n    command: x\n    policy: {retries: -2}\n", nil, nil, `config: FILE:5:23: tool_sources[0].policy.retries: -2 is negative: use 0 for no retries`},
		{"too many retries", "tool_sources:\n  - name: a\n    type: mcp_stdio\n    command: x\n    policy: {retries: 21}\n", nil, nil, `config: FILE:5:23: tool_sources[0].policy.retries: 21 is above 20: use fewer retries (with backoff, 20 already wait minutes)`},
		{"connect timeout without unit", "tool_sources:\n  - {name: a, type: mcp_stdio, command: x, connect_timeout: 10}\n", nil, nil, `config: FILE:2:61: tool_sources[0].connect_timeout: duration 10 has no unit: write e.g. "10s" or "10m"`},
		{"http tool without name", "tool_sources:\n  - name: a\n    type: http\n    tools:\n      - url: https://h/\n", nil, nil, `config: FILE:5:9: tool_sources[0].tools[0].name is required: the tool is called as a.<name>`},
		{"http tool policy", "tool_sources:\n  - name: a\n    type: http\n    tools:\n      - {name: t, url: https://h/, policy: {timeout: -1s}}\n", nil, nil, `config: FILE:5:54: tool_sources[0].tools[0].policy.timeout: -1s is negative: use 0 for no timeout or a positive duration`},
		{"http tool size", "tool_sources:\n  - name: a\n    type: http\n    tools:\n      - {name: t, url: https://h/, max_response_bytes: -1}\n", nil, nil, `config: FILE:5:56: tool_sources[0].tools[0].max_response_bytes: -1 is negative: use 0 for the default (1MiB) or a positive size`},
		{"http tool schema", "tool_sources:\n  - name: a\n    type: http\n    tools:\n      - {name: t, url: https://h/, input_schema: [1]}\n", nil, nil, `config: FILE:5:50: tool_sources[0].tools[0].input_schema must be a mapping (a JSON Schema object) or a boolean`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ptcd.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("ptcd", flag.ContinueOnError)
			DefineFlags(fs)
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			_, err := Load(Options{File: path, LookupEnv: env(tc.env), Flags: fs})
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			got := strings.ReplaceAll(err.Error(), path, "FILE")
			if got != tc.want {
				t.Fatalf("\ngot  %s\nwant %s", got, tc.want)
			}
			for _, bad := range []string{"config: config:", "limits: limits:", "Go struct", "{Timeout:", "interface {}", "yaml:"} {
				if strings.Contains(got, bad) {
					t.Fatalf("%q in %s", bad, got)
				}
			}
		})
	}
}

// TestParseErrorPositions checks that Parse, which has no file name,
// gives the line and column.
func TestParseErrorPositions(t *testing.T) {
	_, err := Parse([]byte("limits:\n  defaults:\n    timeout: 10m\n"))
	want := "config: line 3, column 14: limits.defaults.timeout: 10m0s is above its ceiling limits.ceilings.timeout (5m0s): lower the default or raise the ceiling"
	if err == nil || err.Error() != want {
		t.Fatalf("\ngot  %v\nwant %s", err, want)
	}
}

func TestMissingFileError(t *testing.T) {
	_, err := Load(Options{File: "testdata/nope.yaml"})
	if want := "config: testdata/nope.yaml: no such file or directory"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestClosestKey(t *testing.T) {
	keys := []string{"timeout", "cpu_time", "memory_bytes", "max_tool_calls"}
	cases := []struct{ name, want string }{
		{"timeot", "timeout"}, {"timout", "timeout"}, {"cpu_tim", "cpu_time"}, {"max_tools_calls", "max_tool_calls"},
		{"x", ""}, {"deadline", ""}, {"memory", ""},
	}
	for _, tc := range cases {
		if got := closest(tc.name, keys); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
