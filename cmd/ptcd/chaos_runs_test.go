//go:build !chaos

package main

// chaosRuns is the number of runs of TestTakeoverChaos in the ordinary
// tests; -tags chaos runs 1,000.
const chaosRuns = 50
