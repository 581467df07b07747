//go:build !adversarial

package adversarial

// fullSuite: without the adversarial tag only the fast subset runs (the
// cases marked fast, in both modes).
const fullSuite = false
