package config

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/limits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := Load(Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != DefaultListen || time.Duration(c.ShutdownGrace) != DefaultShutdownGrace || c.DemoTools {
		t.Fatalf("defaults = %+v", c)
	}
	if c.Policy() != limits.DefaultPolicy() {
		t.Fatalf("policy = %+v, want limits.DefaultPolicy()", c.Policy())
	}
}

func TestExampleFileLoads(t *testing.T) {
	c, err := Load(Options{File: "testdata/full.yaml", LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ToolSources) != 3 || c.ToolSources[0].Type != TypeMCPStdio || c.ToolSources[1].Type != TypeMCPHTTP || c.ToolSources[2].Type != TypeHTTP {
		t.Fatalf("tool sources = %+v", c.ToolSources)
	}
	if c.ToolSources[1].IsRequired() || !c.ToolSources[0].IsRequired() {
		t.Fatal("required not read")
	}
	if got := c.ToolSources[2].Tools[0].MaxResponseBytes; got != 256<<10 {
		t.Fatalf("max_response_bytes = %d", got)
	}
	if c.Policy() != limits.DefaultPolicy() {
		t.Fatalf("the example's limits should equal the built-in defaults: %+v", c.Policy())
	}
}

func TestLayering(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		flags     []string
		overrides map[string]string
		check     func(t *testing.T, c *Config)
	}{
		{"file only", nil, nil, nil, func(t *testing.T, c *Config) {
			if c.Listen != "0.0.0.0:9000" || !c.DemoTools || c.ShutdownGrace != Duration(5*time.Second) {
				t.Fatalf("%+v", c)
			}
			if c.Limits.Defaults.Timeout != 20*time.Second || c.Limits.Defaults.MemoryBytes != 128<<20 {
				t.Fatalf("limits %+v", c.Limits.Defaults)
			}
			if c.Limits.Defaults.CPUTime != limits.Defaults().CPUTime {
				t.Fatal("keys absent from the file keep their defaults")
			}
		}},
		{"env over file", map[string]string{"PTC_LISTEN": "127.0.0.1:7000", "PTC_LIMITS_DEFAULTS_TIMEOUT": "25s", "PTC_DEMO_TOOLS": "false", "PTC_LIMITS_CEILINGS_MEMORY_BYTES": "1GiB"}, nil, nil, func(t *testing.T, c *Config) {
			if c.Listen != "127.0.0.1:7000" || c.Limits.Defaults.Timeout != 25*time.Second || c.DemoTools || c.Limits.Ceilings.MemoryBytes != 1<<30 {
				t.Fatalf("%+v", c)
			}
		}},
		{"flags over env", map[string]string{"PTC_LISTEN": "127.0.0.1:7000", "PTC_LIMITS_DEFAULTS_MAX_TOOL_CALLS": "5"}, []string{"-listen", "127.0.0.1:8000", "-limits.defaults.max-tool-calls", "7"}, nil, func(t *testing.T, c *Config) {
			if c.Listen != "127.0.0.1:8000" || c.Limits.Defaults.MaxToolCalls != 7 {
				t.Fatalf("%+v", c)
			}
		}},
		{"unset flags do not override", map[string]string{"PTC_LISTEN": "127.0.0.1:7000"}, []string{"-demo-tools=false"}, nil, func(t *testing.T, c *Config) {
			if c.Listen != "127.0.0.1:7000" || c.DemoTools {
				t.Fatalf("%+v", c)
			}
		}},
		{"overrides last", nil, []string{"-listen", "127.0.0.1:8000"}, map[string]string{"listen": "127.0.0.1:9999"}, func(t *testing.T, c *Config) {
			if c.Listen != "127.0.0.1:9999" {
				t.Fatalf("%+v", c)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("ptcd", flag.ContinueOnError)
			fs.String("config", "", "config file")
			DefineFlags(fs)
			if err := fs.Parse(append([]string{"-config", "x"}, tc.flags...)); err != nil {
				t.Fatal(err)
			}
			c, err := Load(Options{File: "testdata/layers.yaml", LookupEnv: env(tc.env), Flags: fs, Overrides: tc.overrides})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestFixtureErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"testdata/unknown_key.yaml", `config: testdata/unknown_key.yaml:4:5: limits.defaults.timeot: unknown key "timeot" (did you mean timeout?): the keys here are timeout, `},
		{"testdata/secret_in_file.yaml", "config: testdata/secret_in_file.yaml:"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Load(Options{File: tc.file, LookupEnv: env(nil)})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to start with %q", err, tc.want)
			}
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	c, err := Load(Options{File: "testdata/secrets.yaml", LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	environ := []string{"PTC_LISTEN=:1", "PTC_LIMITS_DEFAULTS_TIMOUT=3s", "PTC_GITHUB=x", "HOME=/root", "GITHUB_AUTH=x"}
	c.ToolSources[0].HeadersFromEnv["Authorization"] = "PTC_GITHUB"
	if got := strings.Join(UnknownEnv(environ, c), ","); got != "PTC_LIMITS_DEFAULTS_TIMOUT" {
		t.Fatalf("UnknownEnv = %s", got)
	}
}

func TestMissingFile(t *testing.T) {
	if _, err := Load(Options{File: "testdata/nope.yaml"}); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestPrintHidesSecrets(t *testing.T) {
	vars := map[string]string{"GITHUB_AUTH": "Bearer ghp_SUPERSECRET", "API_KEY": "k-SUPERSECRET"}
	c, err := Load(Options{File: "testdata/secrets.yaml", LookupEnv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Print(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "SUPERSECRET") {
		t.Fatalf("printout leaks a secret:\n%s", out)
	}
	for _, want := range []string{"GITHUB_AUTH", "API_KEY", "listen:", "max_output_bytes: 1MiB", "timeout: 30s"} {
		if !strings.Contains(out, want) {
			t.Fatalf("printout lacks %q:\n%s", want, out)
		}
	}
	// The printout is itself a valid configuration with the same meaning.
	c2, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("printout does not parse: %v\n%s", err, out)
	}
	var buf2 bytes.Buffer
	_ = c2.Print(&buf2)
	if buf2.String() != out {
		t.Fatalf("printout is not stable:\n%s\n---\n%s", out, buf2.String())
	}
}

func TestPrintRoundTripsExample(t *testing.T) {
	c, err := Load(Options{File: "testdata/full.yaml", LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Print(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(buf.Bytes()); err != nil {
		t.Fatalf("printout does not parse: %v\n%s", err, buf.String())
	}
}

func TestSizesAndDurations(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1024", 1024, true}, {"64KiB", 64 << 10, true}, {"256MiB", 256 << 20, true},
		{"2GiB", 2 << 30, true}, {"1TiB", 1 << 40, true}, {"1KB", 1000, true}, {"5MB", 5e6, true}, {"3GB", 3e9, true},
		{"12B", 12, true}, {" 8 MiB ", 8 << 20, true},
		{"", 0, false}, {"MiB", 0, false}, {"1.5MiB", 0, false}, {"99999999999TiB", 0, false}, {"ten", 0, false},
	}
	for _, tc := range cases {
		t.Run("size "+tc.in, func(t *testing.T) {
			var b ByteSize
			err := b.Set(tc.in)
			if (err == nil) != tc.ok || (tc.ok && int64(b) != tc.want) {
				t.Fatalf("Set(%q) = %d, %v", tc.in, b, err)
			}
			if tc.ok {
				var back ByteSize
				if err := back.Set(b.String()); err != nil || back != b {
					t.Fatalf("String round trip %q -> %q -> %d", tc.in, b.String(), back)
				}
			}
		})
	}
	var d Duration
	if err := d.Set("1m30s"); err != nil || time.Duration(d) != 90*time.Second {
		t.Fatalf("duration = %v, %v", d, err)
	}
	if err := d.Set("90"); err == nil {
		t.Fatal("a duration without unit must fail")
	}
}

func TestSetUnknownKey(t *testing.T) {
	if err := Default().Set("tool_sources", "x"); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("err = %v", err)
	}
	// 3 top-level keys, one key per limit on each side, 29 serving keys, 6
	// tracing keys, 14 MCP keys, 7 worker keys, 15 durable keys, 4
	// idempotency keys, 9 wasm keys and 5 python keys.
	if len(Keys()) != 3+2*len(limits.Fields())+29+6+14+7+15+4+9+5 {
		t.Fatalf("keys = %v", Keys())
	}
}

func TestFlagsMustBeParsed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	if _, err := Load(Options{Flags: fs}); err == nil {
		t.Fatal("want error for unparsed flags")
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/full.yaml", "testdata/layers.yaml", "testdata/unknown_key.yaml", "testdata/secrets.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("limits: {defaults: {memory_bytes: 1TiB}}"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := c.Print(&buf); err != nil {
			t.Fatalf("a valid config does not print: %v", err)
		}
	})
}

// TestWASMSection checks that the wasm keys reach the engine's
// configuration and that a bound of zero or less is refused, naming the
// key.
func TestWASMSection(t *testing.T) {
	c, err := Parse([]byte("wasm:\n  compile_timeout: 5s\n  max_nesting: 4000\n  cache_bytes: 1GiB\n  max_function_bytes: 8MiB\n  compile_memory: 256MiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := c.WASM
	if time.Duration(w.CompileTimeout) != 5*time.Second || w.MaxNesting != 4000 || w.CacheBytes != 1<<30 ||
		w.MaxFunctionBytes != 8<<20 || w.MaxBranchTargets != 10_000 || w.CompileMemory != 256<<20 {
		t.Fatalf("wasm section = %+v", w)
	}
	for _, key := range []string{"compile_timeout: 0s", "max_concurrent_compiles: 0", "compile_memory: 0", "cache_bytes: 0", "max_functions: -1",
		"max_function_bytes: 0", "max_nesting: 0", "max_branch_targets: 0", "max_data_segments: 0"} {
		name := key[:strings.IndexByte(key, ':')]
		if _, err := Parse([]byte("wasm:\n  " + key + "\n")); err == nil || !strings.Contains(err.Error(), "wasm."+name) {
			t.Errorf("%s: err = %v, want one naming wasm.%s", key, err, name)
		}
	}
}
