//go:build adversarial

package adversarial

// fullSuite: built with -tags adversarial, every case runs, and the
// bursts and the soak with them.
const fullSuite = true
