//go:build !race

package worker

// raceEnabled reports a race-detector build: its shadow memory counts
// against RLIMIT_DATA, so limits that the detector would break are relaxed.
const raceEnabled = false
