package config

import (
	"flag"
	"time"
)

// Defaults of the idempotency section.
const (
	DefaultIdempotencyRetention  = 10 * time.Minute
	DefaultIdempotencyMaxEntries = 10000
	DefaultIdempotencyMaxBytes   = 64 << 20
	DefaultIdempotencyLinger     = 5 * time.Second
)

// Idempotency configures how Execute and Session keep outcomes by the
// execution_id their caller gave (docs/clients.md, "Retrying"): a request
// repeated with the same id and the same request within the retention
// gets the kept outcome, or waits for the running one, instead of
// running again. The record is this replica's, in memory.
type Idempotency struct {
	// Retention is how long an ended execution's outcome is kept; 0 turns
	// the record off (every request runs).
	Retention Duration `yaml:"retention"`
	// MaxEntries bounds the ended executions remembered; the oldest is
	// forgotten first.
	MaxEntries int `yaml:"max_entries"`
	// MaxBytes bounds the kept outcomes' bytes; past it the oldest outcome
	// is dropped, and a repeat of its request is refused with
	// ALREADY_EXISTS instead of running again.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// Linger is how long an Execute goes on once every caller waiting for
	// it gave up (a cancelled call, a dropped connection), for a retry to
	// come back to it; then it is cancelled.
	Linger Duration `yaml:"linger"`
}

func defaultIdempotency() Idempotency {
	return Idempotency{Retention: Duration(DefaultIdempotencyRetention), MaxEntries: DefaultIdempotencyMaxEntries,
		MaxBytes: ByteSize(DefaultIdempotencyMaxBytes), Linger: Duration(DefaultIdempotencyLinger)}
}

// validate checks the idempotency section, naming the key.
func (i Idempotency) validate() *Error {
	switch {
	case i.Retention < 0:
		return keyError("idempotency.retention", "%s is negative: use a duration such as \"10m\", or 0 to run every request even when it repeats an execution_id", i.Retention)
	case i.MaxEntries < 1:
		return keyError("idempotency.max_entries", "%d is below 1: use a count such as 10000", i.MaxEntries)
	case i.MaxBytes < 0:
		return keyError("idempotency.max_bytes", "%s is negative: use a size such as 64MiB", i.MaxBytes)
	case i.Linger < 0:
		return keyError("idempotency.linger", "%s is negative: use a duration such as \"5s\", or 0 to cancel an Execute as soon as its last caller gives up", i.Linger)
	}
	return nil
}

func idempotencySettings() []setting {
	return []setting{
		{"idempotency.retention", "how long an Execute's or Session's outcome is kept for a repeat with the same execution_id and request (0: off)", func(c *Config) flag.Value { return &c.Idempotency.Retention }},
		{"idempotency.max_entries", "ended executions remembered by execution_id", func(c *Config) flag.Value { return intValue{&c.Idempotency.MaxEntries} }},
		{"idempotency.max_bytes", "bytes of outcomes kept by execution_id (the oldest dropped first)", func(c *Config) flag.Value { return &c.Idempotency.MaxBytes }},
		{"idempotency.linger", "how long an Execute with an execution_id goes on after its last caller gave up, for a retry", func(c *Config) flag.Value { return &c.Idempotency.Linger }},
	}
}
