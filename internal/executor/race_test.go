//go:build race

package executor

// raceEnabled reports a race-detector build (its workers keep their
// RLIMIT_DATA).
const raceEnabled = true
