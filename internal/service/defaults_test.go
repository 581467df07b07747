package service

import (
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// TestConfigDefaultsAreTheEngines checks that the defaults the
// configuration writes down as data are the ones the engines, the
// continuation manager and the executor use when nothing is set: the
// file's defaults and a program's are the same.
func TestConfigDefaultsAreTheEngines(t *testing.T) {
	c := config.Default()
	w, engine := wasmConfig(c), wasm.Config{}.WithDefaults()
	cases := []struct {
		name      string
		got, want any
	}{
		{"wasm.bounds", w.Bounds, engine.Bounds},
		{"wasm.cache_bytes", w.MaxCacheBytes, engine.MaxCacheBytes},
		{"durable.ttl", time.Duration(c.Durable.TTL), durable.DefaultTTL},
		{"durable.max_token_bytes", int(c.Durable.MaxTokenBytes), durable.DefaultMaxTokenBytes},
		{"durable.max_state_bytes", int(c.Durable.MaxStateBytes), durable.DefaultMaxStateBytes},
		{"durable.max_bytes_per_tenant", int64(c.Durable.MaxBytesPerTenant), int64(durable.DefaultMaxBytesPerTenant)},
		{"durable.outcome_retention", time.Duration(c.Durable.OutcomeRetention), durable.DefaultOutcomeRetention},
		{"durable.outcome_bytes", int64(c.Durable.OutcomeBytes), int64(durable.DefaultOutcomeBytes)},
		{"durable key id length", config.MaxDurableKeyIDLength, durable.MaxKeyIDLength},
		{"durable.parked.max", c.Durable.Parked.Max, executor.DefaultParkedMax},
		{"durable.parked.max_bytes", int64(c.Durable.Parked.MaxBytes), int64(executor.DefaultParkedMaxBytes)},
		{"durable.lease.ttl", time.Duration(c.Durable.Lease.TTL), durable.DefaultLease},
		{"durable.lease.renew_every", time.Duration(c.Durable.Lease.RenewEvery), durable.DefaultLeaseRenew},
		{"durable.lease.max_takeovers", c.Durable.Lease.MaxTakeovers, durable.DefaultMaxTakeovers},
		{"durable.parked.max_age", time.Duration(c.Durable.Parked.MaxAge), executor.DefaultParkedMaxAge},
		{"grpc.max_recv_bytes", int(c.GRPC.MaxRecvBytes), 16*executor.DefaultMaxSourceBytes + executor.DefaultMaxInputBytes + 1<<20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("config.Default() has %v, the engine's default is %v: change internal/config to match", tc.got, tc.want)
			}
		})
	}
}

// TestWASMSectionReachesTheEngine checks that the wasm keys reach the
// engine's configuration and the bounds the file has no key for keep the
// engine's defaults.
func TestWASMSectionReachesTheEngine(t *testing.T) {
	c, err := config.Parse([]byte("wasm:\n  compile_timeout: 5s\n  max_nesting: 4000\n  cache_bytes: 1GiB\n  max_function_bytes: 8MiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, d := wasmConfig(c), wasm.Config{}.WithDefaults().Bounds
	if w.Bounds.CompileTimeout != 5*time.Second || w.Bounds.MaxNesting != 4000 || w.MaxCacheBytes != 1<<30 ||
		w.Bounds.MaxFunctionBytes != 8<<20 || w.Bounds.MaxBranchTargets != d.MaxBranchTargets || w.Bounds.MaxTypes != d.MaxTypes {
		t.Fatalf("wasmConfig = %+v", w)
	}
}

// TestPythonSectionReachesTheEngine checks that python.warm reaches the
// executor's Python configuration, its default and a value from the file.
func TestPythonSectionReachesTheEngine(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want int
	}{
		{"default", "", config.DefaultPythonWarm},
		{"set", "python:\n  warm: 5\n", 5},
		{"none", "python:\n  warm: 0\n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := pythonConfig(c).Warm; got != tc.want {
				t.Fatalf("pythonConfig(...).Warm = %d, want %d", got, tc.want)
			}
		})
	}
}
