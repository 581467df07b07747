package ts_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/hostprobe"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
	"github.com/ptcrun/ptc/internal/runtime/ts"
)

// TestNoFileAccessThroughSourceMaps: TypeScript programs, and the eval and
// Function constructors they call, name a source map on the host; inotify
// proves that no file is opened.
func TestNoFileAccessThroughSourceMaps(t *testing.T) {
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "probe.map")
	if err := os.WriteFile(mapFile, []byte(`{"version":3,"sources":["x.ts"],"names":[],"mappings":"AAAA"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	w, err := hostprobe.NewWatch(dir)
	if err != nil {
		t.Skipf("inotify unavailable: %v", err)
	}
	defer w.Close()

	e := ts.NewEngine(js.New(), 0)
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	for _, url := range []string{mapFile, hostprobe.Relative(mapFile), "/dev/zero"} {
		probes := append(hostprobe.SourceMapProbes(url),
			hostprobe.Probe{Name: "typed program", Source: "const s: string = \"ok\";\nreturn s\n//# sourceMappingURL=" + url})
		for _, p := range probes {
			out := e.Run(context.Background(), &runtime.Job{Language: core.LanguageTypeScript, Source: p.Source, Limits: lim})
			if out.Err != nil || string(out.Result) != `"ok"` {
				t.Errorf("%s (%s): result %s, error %v", p.Name, url, out.Result, out.Err)
			}
		}
		if events, err := w.Events(); err != nil || len(events) > 0 {
			t.Fatalf("files touched after the probes naming %s: %v (%v)", url, events, err)
		}
	}
	if _, err := os.ReadFile(mapFile); err != nil {
		t.Fatal(err)
	}
	if events, err := w.Events(); err != nil || len(events) == 0 {
		t.Fatalf("the watch saw nothing of a real read (%v)", err)
	}
}
