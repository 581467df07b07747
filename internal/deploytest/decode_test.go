//go:build !race

package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest: its typed value and its source.
type object struct {
	kind, name, file string
	raw              []byte // the document as JSON
	value            any    // a pointer to the typed object
}

// kustomization is the part of kustomize's file format these manifests use;
// strict decoding refuses any other field, so a kustomization that needs
// more than this renderer applies fails here instead of rendering wrong.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// newTyped returns an empty value of the API type of kind.
func newTyped(apiVersion, kind string) (any, error) {
	types := map[string]func() any{
		"v1/Namespace":                           func() any { return &corev1.Namespace{} },
		"v1/ServiceAccount":                      func() any { return &corev1.ServiceAccount{} },
		"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
		"v1/Secret":                              func() any { return &corev1.Secret{} },
		"v1/Service":                             func() any { return &corev1.Service{} },
		"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
		"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
		"networking.k8s.io/v1/NetworkPolicy":     func() any { return &networkingv1.NetworkPolicy{} },
		"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
		"node.k8s.io/v1/RuntimeClass":            func() any { return &nodev1.RuntimeClass{} },
	}
	mk, ok := types[apiVersion+"/"+kind]
	if !ok {
		return nil, fmt.Errorf("%s %s is not a kind these manifests use", apiVersion, kind)
	}
	return mk(), nil
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decodeFile strictly decodes every document of a manifest file.
func decodeFile(file string) ([]object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []object
	for _, doc := range docSep.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, err := decodeDoc([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		obj.file = file
		out = append(out, obj)
	}
	return out, nil
}

// stripComments drops whole-line comments (to find empty documents).
func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decodeDoc decodes one YAML document into its API type, refusing
// unknown fields, duplicate fields and values of the wrong type.
func decodeDoc(doc []byte) (object, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return object{}, err
	}
	v, err := newTyped(head.APIVersion, head.Kind)
	if err != nil {
		return object{}, err
	}
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		return object{}, fmt.Errorf("%s %q: %w", head.Kind, head.Metadata.Name, err)
	}
	raw, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return object{}, err
	}
	return object{kind: head.Kind, name: head.Metadata.Name, raw: raw, value: v}, nil
}

// render loads the kustomization in dir: its resources (files, or
// directories holding a kustomization, rendered first), then its patches
// applied as strategic-merge patches to the object of the same kind and
// name, as kustomize does.
func render(dir string) ([]object, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	var objs []object
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		var got []object
		if st.IsDir() {
			got, err = render(p)
		} else {
			got, err = decodeFile(p)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	for _, pt := range k.Patches {
		patches, err := decodeFile(filepath.Join(dir, pt.Path))
		if err != nil {
			return nil, err
		}
		for _, patch := range patches {
			if err := applyPatch(objs, patch); err != nil {
				return nil, err
			}
		}
	}
	return objs, nil
}

// applyPatch merges patch into the object it names.
func applyPatch(objs []object, patch object) error {
	for i, o := range objs {
		if o.kind != patch.kind || o.name != patch.name {
			continue
		}
		merged, err := strategicpatch.StrategicMergePatch(o.raw, patch.raw, o.value)
		if err != nil {
			return fmt.Errorf("%s: %w", patch.file, err)
		}
		v, err := newTyped(headOf(merged))
		if err != nil {
			return err
		}
		if err := yaml.UnmarshalStrict(merged, v); err != nil {
			return fmt.Errorf("%s applied: %w", patch.file, err)
		}
		objs[i].raw, objs[i].value = merged, v
		return nil
	}
	return fmt.Errorf("%s: patches %s %q, which no resource defines", patch.file, patch.kind, patch.name)
}

// headOf reads apiVersion and kind from a JSON object.
func headOf(raw []byte) (string, string) {
	var h struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	_ = yaml.Unmarshal(bytes.TrimSpace(raw), &h)
	return h.APIVersion, h.Kind
}
