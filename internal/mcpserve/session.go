package mcpserve

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// sessionTag starts the id of every session of a caller identity: the
// first 8 bytes of the SHA-256 of its key, in hex, and a dash. The HTTP
// handler refuses a session id that does not start with the tag of the
// identity that sent the request, so a session answers only the identity
// that opened it.
func sessionTag(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8]) + "-"
}

// newSessionID returns 128 random bits in base32 (rand.Text).
func newSessionID() string { return rand.Text() }
