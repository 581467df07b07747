// Package deploytest validates the Kubernetes manifests in deploy/kubernetes
// offline: every object decodes strictly into the Kubernetes API types
// (an unknown field, a wrong type or a bad quantity fails), the overlays
// are rendered by applying their strategic-merge patches to the base, and
// the rendered objects obey ptc's policy rules (the restricted Pod Security
// profile, probes, resources by the capacity formula, drain timing, no
// `latest` images). It is a test-only package: nothing links it, so the
// Kubernetes modules stay out of ptcd and ptc. Its tests are left out
// under the race detector (they start no goroutine), which spares CI a
// second compile of the Kubernetes API packages.
package deploytest
