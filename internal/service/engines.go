package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
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
		InProcess: c.Python.InSupervisor, Warm: c.Python.Warm}
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

// maxDSNFileBytes bounds the file durable.store.postgres_dsn_file names.
const maxDSNFileBytes = 64 << 10

// postgresDSN reads the PostgreSQL connection string from the
// environment variable or the file the store section names; surrounding
// white space (a file's final newline) is dropped. Errors name where it
// was looked for, never what it holds.
func postgresDSN(s config.DurableStore, lookupEnv func(string) (string, bool)) (string, error) {
	if s.PostgresDSNEnv != "" {
		dsn, ok := lookupEnv(s.PostgresDSNEnv)
		if !ok || strings.TrimSpace(dsn) == "" {
			return "", fmt.Errorf("environment variable %s (durable.store.postgres_dsn_env) is not set", s.PostgresDSNEnv)
		}
		return strings.TrimSpace(dsn), nil
	}
	f, err := os.Open(s.PostgresDSNFile)
	if err != nil {
		return "", fmt.Errorf("durable.store.postgres_dsn_file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDSNFileBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("durable.store.postgres_dsn_file: %w", err)
	case len(b) > maxDSNFileBytes:
		return "", fmt.Errorf("durable.store.postgres_dsn_file: %s is larger than %d bytes: it should hold one connection string", s.PostgresDSNFile, maxDSNFileBytes)
	case strings.TrimSpace(string(b)) == "":
		return "", fmt.Errorf("durable.store.postgres_dsn_file: %s is empty: it should hold one connection string", s.PostgresDSNFile)
	}
	return strings.TrimSpace(string(b)), nil
}

// durableManager builds the continuation manager of the durable section,
// reading the secrets (and the Redis URL or PostgreSQL connection
// string) through lookupEnv and opening
// the store.
func durableManager(ctx context.Context, c *config.Config, lookupEnv func(string) (string, bool)) (*durable.Manager, error) {
	d := c.Durable
	cfg := durable.Config{TTL: time.Duration(d.TTL), MaxTokenBytes: int(d.MaxTokenBytes), MaxStateBytes: int(d.MaxStateBytes),
		MaxBytesPerTenant: int64(d.MaxBytesPerTenant), MaxStoredBytes: int64(d.MaxBytes),
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
	case d.Store.PostgresDSNEnv != "" || d.Store.PostgresDSNFile != "":
		var dsn string
		if dsn, err = postgresDSN(d.Store, lookupEnv); err != nil {
			return nil, err
		}
		// A stored state is at most max_state_bytes and its encryption's
		// overhead; an outcome at most what the manager opens (256MiB).
		cfg.Store, err = durable.OpenPostgres(ctx, dsn, durable.PostgresOptions{
			MaxBytes: max(durable.DefaultPostgresMaxBytes, int(d.MaxStateBytes)+64<<10)})
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
