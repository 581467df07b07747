package durable

import "encoding/hex"

// PauseIDOf reads the pause id from a continuation without verifying it
// (no key is needed): for routing a Resume to the replica that parked the
// execution, never for trusting it — the replica that resumes verifies
// the continuation as always. False when tok is not a continuation.
func PauseIDOf(tok string) (string, bool) {
	h, _, _, _, err := parse(tok)
	if err != nil {
		return "", false
	}
	return hex.EncodeToString(h.pauseID[:]), true
}
