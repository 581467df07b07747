package js_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ptcrun/ptc/internal/hostprobe"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// sourceMap is a valid source map, so that an engine that did load it
// would compile without complaint: only the file access gives it away.
const sourceMap = `{"version":3,"sources":["x.js"],"names":[],"mappings":"AAAA"}`

// TestNoFileAccessThroughSourceMaps runs a script through every compile
// path a script can reach (the program, eval, the Function constructors…)
// with text naming a source map on the host, and proves with inotify that
// no file is opened: goja resolves "//# sourceMappingURL=" and reads the
// file unless source maps are disabled on that path.
func TestNoFileAccessThroughSourceMaps(t *testing.T) {
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "probe.map")
	if err := os.WriteFile(mapFile, []byte(sourceMap), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // relative URLs resolve against the working directory
	w, err := hostprobe.NewWatch(dir)
	if err != nil {
		t.Skipf("inotify unavailable: %v", err)
	}
	defer w.Close()

	e := js.New()
	for _, url := range []string{mapFile, hostprobe.Relative(mapFile), "file://" + mapFile} {
		for _, p := range hostprobe.SourceMapProbes(url) {
			out, _, _ := run(t, e, p.Source, runOpts{})
			if out.Err != nil || string(out.Result) != `"ok"` {
				t.Errorf("%s (%s): result %s, error %v", p.Name, url, out.Result, out.Err)
			}
		}
	}
	events, err := w.Events()
	if err != nil {
		t.Fatal(err)
	}
	if len(events) > 0 {
		t.Fatalf("the executions touched files they named: %v", events)
	}

	// /dev/zero never ends: reading it as a source map would hang and
	// exhaust memory. Run only once no file was opened above.
	for _, p := range hostprobe.SourceMapProbes("/dev/zero") {
		out, _, _ := run(t, e, p.Source, runOpts{})
		if out.Err != nil || string(out.Result) != `"ok"` {
			t.Errorf("%s (/dev/zero): result %s, error %v", p.Name, out.Result, out.Err)
		}
	}

	// The watch works: reading the map ourselves is seen.
	if _, err := os.ReadFile(mapFile); err != nil {
		t.Fatal(err)
	}
	if events, err := w.Events(); err != nil || len(events) == 0 {
		t.Fatalf("the watch saw nothing of a real read (%v)", err)
	}
}
