//go:build !race

package deploytest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Capacity formula (docs/deploy.md#capacity): a pod's memory limit is at
// least ptcd's own memory plus, for every execution admitted at once, the
// memory ceiling of one execution times an overhead factor.
const (
	supervisorMemory = 256 << 20 // ptcd's own heap, buffers and parked state
	overheadNum      = 5         // overhead factor 5/4: a worker process's
	overheadDen      = 4         // runtime and buffers above its script's heap
	preStopMargin    = 5 * time.Second
)

// serverConfig is what the policy needs from ptcd.yaml.
type serverConfig struct {
	shutdownGrace time.Duration
	maxConcurrent int64
	memoryCeiling int64
}

// configOf reads ptcd.yaml from the ptcd-config ConfigMap.
func configOf(objs []object) (serverConfig, error) {
	for _, o := range objs {
		cm, ok := o.value.(*corev1.ConfigMap)
		if !ok || cm.Name != "ptcd-config" {
			continue
		}
		var f struct {
			ShutdownGrace string `json:"shutdown_grace"`
			Admission     struct {
				MaxConcurrent int64 `json:"max_concurrent"`
			} `json:"admission"`
			Limits struct {
				Ceilings struct {
					MemoryBytes string `json:"memory_bytes"`
				} `json:"ceilings"`
			} `json:"limits"`
		}
		if err := yaml.Unmarshal([]byte(cm.Data["ptcd.yaml"]), &f); err != nil {
			return serverConfig{}, fmt.Errorf("ptcd-config ptcd.yaml: %w", err)
		}
		grace, err := time.ParseDuration(f.ShutdownGrace)
		if err != nil {
			return serverConfig{}, fmt.Errorf("ptcd-config shutdown_grace: %w", err)
		}
		// ptcd's sizes are 256MiB; Kubernetes quantities are 256Mi.
		mem, err := resource.ParseQuantity(strings.TrimSuffix(f.Limits.Ceilings.MemoryBytes, "B"))
		if err != nil {
			return serverConfig{}, fmt.Errorf("ptcd-config limits.ceilings.memory_bytes: %w", err)
		}
		if f.Admission.MaxConcurrent <= 0 {
			return serverConfig{}, errors.New("ptcd-config: admission.max_concurrent must be set: the capacity formula needs it")
		}
		return serverConfig{shutdownGrace: grace, maxConcurrent: f.Admission.MaxConcurrent, memoryCeiling: mem.Value()}, nil
	}
	return serverConfig{}, errors.New("no ConfigMap ptcd-config")
}

// checkObjects applies every rule to every object and joins the breaches.
func checkObjects(objs []object, cfg serverConfig) error {
	var errs []error
	for _, o := range objs {
		switch v := o.value.(type) {
		case *corev1.Namespace:
			for _, mode := range []string{"enforce", "warn", "audit"} {
				if l := v.Labels["pod-security.kubernetes.io/"+mode]; l != "restricted" {
					errs = append(errs, fmt.Errorf("%s: Namespace %s: pod-security.kubernetes.io/%s is %q, want restricted", o.file, v.Name, mode, l))
				}
			}
		case *appsv1.Deployment:
			for _, err := range checkDeployment(v, cfg) {
				errs = append(errs, fmt.Errorf("%s: Deployment %s: %w", o.file, v.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// checkDeployment holds the restricted Pod Security profile, the probes,
// the resources, the drain timing and the image rules.
func checkDeployment(d *appsv1.Deployment, cfg serverConfig) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pod := d.Spec.Template.Spec
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		bad("hostNetwork, hostPID and hostIPC must be false")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			bad("volume %s is a hostPath", v.Name)
		}
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		bad("pod securityContext.runAsNonRoot must be true")
	}
	podSeccomp := psc != nil && seccompConfined(psc.SeccompProfile)
	if !podSeccomp {
		bad("pod securityContext.seccompProfile must be RuntimeDefault or Localhost")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		bad("automountServiceAccountToken must be false: ptcd uses no Kubernetes API")
	}
	if len(pod.Containers) == 0 {
		bad("no containers")
	}
	for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
		for _, err := range checkContainer(c, podSeccomp) {
			bad("container %s: %w", c.Name, err)
		}
	}
	var preStop time.Duration
	for _, c := range pod.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		if preStop == 0 {
			bad("container %s: lifecycle.preStop.sleep must give endpoints time to drop the pod before ptcd drains", c.Name)
		}
		if c.Resources.Limits.Memory().IsZero() {
			continue
		}
		want := supervisorMemory + cfg.maxConcurrent*cfg.memoryCeiling*overheadNum/overheadDen
		if got := c.Resources.Limits.Memory().Value(); got < want {
			bad("container %s: memory limit %s is below the capacity formula's %dMi (256Mi + %d × %dMi × 1.25)",
				c.Name, c.Resources.Limits.Memory(), want>>20, cfg.maxConcurrent, cfg.memoryCeiling>>20)
		}
	}
	need := preStop + cfg.shutdownGrace + preStopMargin
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < need {
		bad("terminationGracePeriodSeconds must be at least preStop + shutdown_grace + 5s = %ds", int(need.Seconds()))
	}
	return errs
}

// seccompConfined reports whether a profile is RuntimeDefault or Localhost.
func seccompConfined(p *corev1.SeccompProfile) bool {
	return p != nil && (p.Type == corev1.SeccompProfileTypeRuntimeDefault || p.Type == corev1.SeccompProfileTypeLocalhost)
}

// checkContainer holds one container to the restricted profile and ptc's
// own rules.
func checkContainer(c corev1.Container, podSeccomp bool) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := checkImage(c.Image); err != nil {
		errs = append(errs, err)
	}
	sc := c.SecurityContext
	if sc == nil {
		return append(errs, errors.New("no securityContext"))
	}
	if sc.Privileged != nil && *sc.Privileged {
		bad("privileged must be false")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		bad("allowPrivilegeEscalation must be false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		bad("readOnlyRootFilesystem must be true")
	}
	if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		bad("runAsUser must not be 0")
	}
	if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		bad("capabilities must drop [ALL]")
	}
	if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		bad("capabilities must add none, not %v", sc.Capabilities.Add)
	}
	if sc.SeccompProfile != nil && !seccompConfined(sc.SeccompProfile) || sc.SeccompProfile == nil && !podSeccomp {
		bad("seccompProfile must be RuntimeDefault or Localhost")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.GRPC == nil {
		bad("readinessProbe must be a gRPC health check")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		bad("livenessProbe must GET /healthz")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		bad("resources.requests must set cpu and memory")
	}
	if c.Resources.Limits.Memory().IsZero() {
		bad("resources.limits must set a memory limit")
	}
	return errs
}

// checkImage refuses an image without a tag or digest, or tagged latest.
func checkImage(image string) error {
	name, digest, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(name, "/")
	colon := strings.LastIndex(name, ":")
	tag := ""
	if colon > slash {
		tag = name[colon+1:]
	}
	switch {
	case tag == "latest":
		return fmt.Errorf("image %s: the latest tag names no fixed image", image)
	case tag == "" && digest == "":
		return fmt.Errorf("image %s has no tag and no digest", image)
	}
	return nil
}
