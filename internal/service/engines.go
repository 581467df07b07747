package service

import (
	"context"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// WorkerConfig maps the workers section onto the worker pool's
// configuration (ptcd and `ptc mcp` run scripts in that pool; `ptcd
// check` reports on it).
func WorkerConfig(c *config.Config) worker.Config {
	w := c.Workers
	mode := worker.ModeWorker
	if w.Mode == "inprocess" {
		mode = worker.ModeInProcess
	}
	idle := w.Idle
	if idle == 0 {
		idle = -1 // the pool's "none"
	}
	return worker.Config{
		Mode:                    mode,
		Workers:                 idle,
		MaxWorkers:              w.Max,
		ExecutionsPerWorker:     w.ExecutionsPerWorker,
		IdleTimeout:             time.Duration(w.IdleTimeout),
		RecycleAfter:            w.RecycleAfter,
		MaxExecutionMemoryBytes: c.Policy().Ceilings.MemoryBytes,
	}
}

// CheckWorkers starts one worker process as the workers section
// configures it and returns the isolation it has on this host (`ptcd
// check`).
func CheckWorkers(c *config.Config) (worker.Facts, error) { return worker.Check(WorkerConfig(c)) }

// wasmConfig maps the wasm section onto the WebAssembly engine's
// configuration (ptcd's engine and, through the worker pool, the
// workers').
func wasmConfig(c *config.Config) wasm.Config {
	w := c.WASM
	b := wasm.Config{}.WithDefaults().Bounds
	b.CompileTimeout = time.Duration(w.CompileTimeout)
	b.MaxConcurrentCompiles = w.MaxConcurrentCompiles
	b.CompileMemoryBytes = int64(w.CompileMemory)
	b.MaxFunctions = w.MaxFunctions
	b.MaxFunctionBytes = int(w.MaxFunctionBytes)
	b.MaxNesting = w.MaxNesting
	b.MaxBranchTargets = w.MaxBranchTargets
	b.MaxDataSegments = w.MaxDataSegments
	return wasm.Config{MaxCacheBytes: int64(w.CacheBytes), Bounds: b}
}

// pythonConfig maps the python section onto the executor's.
func pythonConfig(c *config.Config) executor.PythonConfig {
	return executor.PythonConfig{Interpreter: c.Python.Interpreter, SHA256: c.Python.SHA256, CacheDir: c.Python.CacheDir,
		OnlyWithConsent: !c.Python.InSupervisor, Warm: c.Python.Warm}
}

// parkedConfig is the executor's bound on parked executions (0 in the
// file keeps none).
func parkedConfig(c *config.Config) executor.ParkedConfig {
	p := c.Durable.Parked
	max := p.Max
	if max == 0 {
		max = -1
	}
	return executor.ParkedConfig{Max: max, MaxBytes: int64(p.MaxBytes), MaxAge: time.Duration(p.MaxAge)}
}

// durableManager builds the continuation manager of the durable section,
// reading the secrets (and the Redis URL) through lookupEnv and opening
// the store.
func durableManager(ctx context.Context, c *config.Config, lookupEnv func(string) (string, bool)) (*durable.Manager, error) {
	d := c.Durable
	cfg := durable.Config{TTL: time.Duration(d.TTL), MaxTokenBytes: int(d.MaxTokenBytes), MaxStateBytes: int(d.MaxStateBytes),
		OutcomeRetention: time.Duration(d.OutcomeRetention), OutcomeBytes: int64(d.OutcomeBytes),
		Lease: time.Duration(d.Lease.TTL), LeaseRenew: time.Duration(d.Lease.RenewEvery), MaxTakeovers: d.Lease.MaxTakeovers}
	if cfg.MaxTakeovers == 0 {
		cfg.MaxTakeovers = -1 // none: durable.Config's zero is its default
	}
	for _, k := range d.Keys {
		v, ok := lookupEnv(k.SecretEnv)
		if !ok {
			return nil, fmt.Errorf("environment variable %s (durable key %q) is not set: set it before starting ptcd", k.SecretEnv, k.ID)
		}
		cfg.Keys = append(cfg.Keys, durable.Key{ID: k.ID, Secret: []byte(v)})
	}
	var err error
	switch {
	case d.Store.File != "":
		cfg.Store, err = durable.OpenFile(d.Store.File)
	case d.Store.RedisURLEnv != "":
		url, ok := lookupEnv(d.Store.RedisURLEnv)
		if !ok {
			return nil, fmt.Errorf("environment variable %s (durable.store.redis_url_env) is not set", d.Store.RedisURLEnv)
		}
		cfg.Store, err = durable.OpenRedis(ctx, url, d.Store.RedisPrefix)
	}
	if err != nil {
		return nil, err
	}
	m, err := durable.New(cfg)
	if err != nil {
		if cfg.Store != nil {
			_ = cfg.Store.Close()
		}
		return nil, err
	}
	return m, nil
}
