//go:build chaos

package main

// chaosRuns is the number of runs of TestTakeoverChaos under -tags chaos
// (.ci/run's slow step).
const chaosRuns = 1000
