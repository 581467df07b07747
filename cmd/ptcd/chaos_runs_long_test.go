//go:build chaos

package main

// chaosRuns and pgChaosRuns are the numbers of runs of TestTakeoverChaos
// on Redis and on PostgreSQL under -tags chaos (.ci/run's slow step):
// the store contract is one, so PostgreSQL's share is smaller.
const (
	chaosRuns   = 1000
	pgChaosRuns = 200
)
