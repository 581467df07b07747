// Package testenv gives tests what they need from outside the Go module:
// the commands built as users build them (BuildCommand), and the Node.js
// programs that `npm ci` installs into node_modules (NodeBin), and a
// buffer a logger may write from other goroutines (SyncBuffer).
//
// A test that needs node_modules skips without it, except under CI=true,
// where it fails. Because `go test ./...` shows nothing of a passing
// package but its "ok" line, a skip would go unnoticed; SkipReport makes
// the package's TestMain print one line naming the skipped tests and why,
// and puts that line where the person running `go test` sees it (see
// SkipReport).
//
// Only tests import testenv.
package testenv
