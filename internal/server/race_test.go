//go:build race

package server_test

// raceEnabled reports a race-detector build, whose shadow memory the Go
// runtime does not return to the system.
const raceEnabled = true
