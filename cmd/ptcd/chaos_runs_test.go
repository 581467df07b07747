//go:build !chaos

package main

// chaosRuns and pgChaosRuns are the numbers of runs of TestTakeoverChaos
// on Redis and on PostgreSQL in the ordinary tests; -tags chaos runs more.
const (
	chaosRuns   = 50
	pgChaosRuns = 50
)
