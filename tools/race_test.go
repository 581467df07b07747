//go:build race

package tools_test

// raceEnabled: the race detector slows a check several times over.
const raceEnabled = true
