//go:build !race

package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const manifests = "../../deploy/kubernetes"

// baseConfig reads ptcd.yaml from the base's ConfigMap.
func baseConfig(t *testing.T) serverConfig {
	t.Helper()
	objs, err := render(filepath.Join(manifests, "base"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configOf(objs)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestKustomizations renders the base and each overlay and holds every
// object to the policy.
func TestKustomizations(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		check   func(t *testing.T, objs []object)
		objects int
	}{
		{dir: "base", objects: 9},
		{dir: "overlays/restricted", objects: 9, check: func(t *testing.T, objs []object) {
			if d := deployment(t, objs); *d.Spec.Replicas != 3 {
				t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
			}
		}},
		{dir: "overlays/gvisor", objects: 10, check: func(t *testing.T, objs []object) {
			d := deployment(t, objs)
			if rc := d.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != "gvisor" {
				t.Errorf("runtimeClassName %v, want gvisor", rc)
			}
			if c := d.Spec.Template.Spec.Containers; len(c) != 1 || c[0].ReadinessProbe == nil {
				t.Errorf("the patch lost the base's container: %+v", c)
			}
		}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			objs, err := render(filepath.Join(manifests, tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != tc.objects {
				t.Errorf("%d objects, want %d", len(objs), tc.objects)
			}
			cfg, err := configOf(objs)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkObjects(objs, cfg); err != nil {
				t.Error(err)
			}
			if tc.check != nil {
				tc.check(t, objs)
			}
		})
	}
}

// TestOtherManifests decodes the files outside the kustomizations (the
// Secret templates, the adapter's rules) strictly.
func TestOtherManifests(t *testing.T) {
	for _, f := range []string{"secrets.example.yaml", "prometheus-adapter-rules.yaml"} {
		t.Run(f, func(t *testing.T) {
			objs, err := decodeFile(filepath.Join(manifests, f))
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 {
				t.Fatal("no objects")
			}
		})
	}
}

// TestBrokenManifests holds that each deliberately broken manifest in
// testdata/broken fails decoding or the policy, with the error its first
// line ("# want: ...") names.
func TestBrokenManifests(t *testing.T) {
	cfg := baseConfig(t)
	files, err := filepath.Glob("testdata/broken/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("want the broken manifests in testdata/broken: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			want := wantLine(t, f)
			objs, err := decodeFile(f)
			if err == nil {
				err = checkObjects(objs, cfg)
			}
			if err == nil {
				t.Fatalf("%s passed; want an error with %q", f, want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
		})
	}
}

// wantLine reads the "# want: ..." first line of a broken manifest.
func wantLine(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "# want: ") {
		t.Fatalf("%s: the first line must be \"# want: <part of the error>\"", file)
	}
	return strings.TrimPrefix(sc.Text(), "# want: ")
}
