package ptc

import (
	"fmt"
	"reflect"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/tools"
)

// Option configures a Runner. NewRunner collects every option first and
// builds the Runner from all of them in one place, so their order never
// matters: WithTools adds to the registry WithRegistry gives, whichever
// comes first, and an option that sets one thing given twice with
// different values is refused with an error naming it.
type Option interface {
	apply(*options) error
}

// optionFunc is an Option that records what it sets.
type optionFunc func(*options) error

func (f optionFunc) apply(o *options) error { return f(o) }

// options is what the options collect; executorConfig builds from it.
type options struct {
	tools     []tools.Tool
	registry  *tools.Registry
	defaults  *Limits
	ceilings  *Limits
	maxSource *int
	maxInput  *int
	languages *[]Language
	isolation *Isolation
	wasm      *WASM
	durable   *Durable
}

// setOnce records v in *dst, refusing a second, different value: an
// option names one setting, and two values for it have no order to
// choose between.
func setOnce[T any](name string, dst **T, v T) error {
	if *dst != nil && !reflect.DeepEqual(**dst, v) {
		return fmt.Errorf("ptc: %s given twice with different values: give it once", name)
	}
	*dst = &v
	return nil
}

// WithTools registers server tools. Given with WithRegistry, in either
// order, the tools are registered in that registry; given more than once,
// every call's tools are registered. Two tools with one name are an error
// from NewRunner.
func WithTools(ts ...tools.Tool) Option {
	return optionFunc(func(o *options) error { o.tools = append(o.tools, ts...); return nil })
}

// WithRegistry uses reg (which may be shared) for server tools; the tools
// of WithTools are added to it. Two different registries are refused.
func WithRegistry(reg *tools.Registry) Option {
	return optionFunc(func(o *options) error {
		if reg == nil {
			return fmt.Errorf("ptc: WithRegistry(nil): give a registry (tools.NewRegistry()), or leave the option out")
		}
		if o.registry != nil && o.registry != reg {
			return fmt.Errorf("ptc: WithRegistry given twice with different registries: give one (add tools to it, or use WithTools)")
		}
		o.registry = reg
		return nil
	})
}

// WithDefaults sets the limits used for fields a request leaves at zero.
func WithDefaults(l Limits) Option {
	return optionFunc(func(o *options) error { return setOnce("WithDefaults", &o.defaults, l) })
}

// WithCeilings sets the largest limits a request may ask for.
func WithCeilings(l Limits) Option {
	return optionFunc(func(o *options) error { return setOnce("WithCeilings", &o.ceilings, l) })
}

// WithMaxSourceBytes bounds a script's source (default 1 MiB; a
// WebAssembly module may be 16 times larger).
func WithMaxSourceBytes(n int) Option {
	return optionFunc(func(o *options) error { return setOnce("WithMaxSourceBytes", &o.maxSource, n) })
}

// WithMaxInputBytes bounds a request's input JSON (default 8 MiB).
func WithMaxInputBytes(n int) Option {
	return optionFunc(func(o *options) error { return setOnce("WithMaxInputBytes", &o.maxInput, n) })
}

// WithLanguages enables only the given languages; requests in any other
// language are refused as Unimplemented (an operator may, say, disable
// WebAssembly).
func WithLanguages(langs ...Language) Option {
	return optionFunc(func(o *options) error {
		for _, l := range langs {
			if !core.Language(l).Valid() {
				return fmt.Errorf("ptc: unknown language %d", int32(l))
			}
		}
		return setOnce("WithLanguages", &o.languages, append([]Language{}, langs...))
	})
}

// WithIsolation selects where JavaScript and TypeScript run:
//
//	ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true})
func WithIsolation(i Isolation) Option {
	return optionFunc(func(o *options) error { return setOnce("WithIsolation", &o.isolation, i) })
}

// WithWASM configures the WebAssembly engine.
func WithWASM(w WASM) Option {
	return optionFunc(func(o *options) error { return setOnce("WithWASM", &o.wasm, w) })
}

// WithDurable configures resumable executions: continuation keys, their
// lifetime and where used continuations and large states are kept.
func WithDurable(d Durable) Option {
	return optionFunc(func(o *options) error {
		if n := countSet(d.StateFile, d.RedisURL, d.PostgresDSN); n > 1 {
			return fmt.Errorf("ptc: Durable: give one of StateFile, RedisURL and PostgresDSN, not %d", n)
		}
		if len(d.Keys) > 0 {
			if _, ok := d.Keys[d.SigningKey]; !ok {
				return fmt.Errorf("ptc: Durable: SigningKey %q is not one of Keys", d.SigningKey)
			}
		}
		return setOnce("WithDurable", &o.durable, d)
	})
}

// durableOrZero is the Durable given, or the zero value.
func (o *options) durableOrZero() Durable {
	if o.durable == nil {
		return Durable{}
	}
	return *o.durable
}

// pythonWarm is how many Python interpreters a Runner keeps started ahead
// of Python scripts once it has run one (ptcd's python.warm default).
const pythonWarm = 2

// executorConfig builds the executor's configuration from every option:
// the one place where they take effect.
func (o *options) executorConfig() (executor.Config, error) {
	cfg := executor.Config{Registry: o.registry, Policy: limits.DefaultPolicy(),
		Python: executor.PythonConfig{Warm: pythonWarm}}
	if cfg.Registry == nil {
		cfg.Registry = tools.NewRegistry()
	}
	for _, t := range o.tools {
		if err := cfg.Registry.Register(t); err != nil {
			return cfg, err
		}
	}
	if o.defaults != nil {
		cfg.Policy.Defaults = limits.Limits(*o.defaults)
	}
	if o.ceilings != nil {
		cfg.Policy.Ceilings = limits.Limits(*o.ceilings)
	}
	if o.maxSource != nil {
		cfg.MaxSourceBytes = *o.maxSource
	}
	if o.maxInput != nil {
		cfg.MaxInputBytes = *o.maxInput
	}
	if o.languages != nil && len(*o.languages) > 0 {
		cfg.Languages = make([]core.Language, 0, len(*o.languages))
		for _, l := range *o.languages {
			cfg.Languages = append(cfg.Languages, core.Language(l))
		}
	}
	if w := o.isolation; w != nil && w.WorkerProcesses {
		cfg.Workers = &worker.Config{Workers: w.Idle, MaxWorkers: w.Max, ExecutionsPerWorker: w.ExecutionsPerWorker,
			IdleTimeout: w.IdleTimeout, RecycleAfter: w.RecycleAfter, Executable: w.Executable, Logger: w.Logger}
		cfg.Python.InProcess = w.PythonInProcess
	}
	if w := o.wasm; w != nil {
		cfg.WASM = wasm.Config{CacheDir: w.CacheDir, MaxModules: w.MaxModules, RealClock: w.RealClock, RealRandom: w.RealRandom}
	}
	return cfg, nil
}

// countSet returns how many of vs are not empty.
func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}
