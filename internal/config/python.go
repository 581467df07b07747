package config

import (
	"encoding/hex"
	"flag"
)

// Python configures the Python engine: the interpreter module ptcd runs
// Python scripts with (docs/python.md). Unset, ptcd looks for the pinned
// interpreter in the user's cache (`ptc python install`) and in
// node_modules.
type Python struct {
	// Interpreter is the path of python.wasm.
	Interpreter string `yaml:"interpreter"`
	// SHA256 is its hex SHA-256; the file is refused if it differs. Empty
	// means the pinned interpreter's digest.
	SHA256 string `yaml:"sha256"`
	// CacheDir keeps the interpreter's compiled code, so that a restarted
	// ptcd loads it in seconds instead of compiling it again.
	CacheDir string `yaml:"cache_dir"`
	// InSupervisor runs Python in ptcd's own process even when workers.mode
	// is worker (under the WebAssembly engine's memory, time and CPU
	// limits, but outside the worker sandbox). Unset, Python runs in the
	// worker processes, as JavaScript and WebAssembly do.
	InSupervisor bool `yaml:"in_supervisor"`
	// Warm is how many interpreters are kept started ahead of requests
	// (their prelude loaded, waiting for a job); 0 starts one per request.
	Warm int `yaml:"warm"`
}

// DefaultPythonWarm is python.warm's default.
const DefaultPythonWarm = 2

// MaxPythonWarm bounds python.warm: each waiting interpreter holds its
// memory (about 10 MiB) and took about 0.15 s of CPU to start.
const MaxPythonWarm = 64

func pythonSettings() []setting {
	return []setting{
		{"python.interpreter", "path of the CPython for WASI module (python.wasm)", func(c *Config) flag.Value { return stringValue{&c.Python.Interpreter} }},
		{"python.sha256", "the interpreter's hex SHA-256 (default: the pinned one); a file that differs is refused", func(c *Config) flag.Value { return stringValue{&c.Python.SHA256} }},
		{"python.cache_dir", "directory keeping the interpreter's compiled code", func(c *Config) flag.Value { return stringValue{&c.Python.CacheDir} }},
		{"python.in_supervisor", "run Python in ptcd's own process, outside the worker sandbox, even with workers.mode worker", func(c *Config) flag.Value { return boolValue{&c.Python.InSupervisor} }},
		{"python.warm", "interpreters kept started ahead of Python requests (0: none)", func(c *Config) flag.Value { return intValue{&c.Python.Warm} }},
	}
}

func (p Python) validate() *Error {
	if p.Warm < 0 || p.Warm > MaxPythonWarm {
		return keyError("python.warm", "%d is not between 0 and %d: give the number of interpreters to keep started (0 for none)", p.Warm, MaxPythonWarm)
	}
	if p.SHA256 != "" {
		if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
			return keyError("python.sha256", "%q is not a SHA-256 digest: give 64 hexadecimal digits (sha256sum python.wasm)", p.SHA256)
		}
	}
	return nil
}
