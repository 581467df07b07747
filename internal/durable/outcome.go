package durable

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
)

// Defaults of the outcomes kept for retried resumes.
const (
	// DefaultOutcomeRetention is how long the outcome of a resume is kept
	// for a retry with the same continuation and answers.
	DefaultOutcomeRetention = 10 * time.Minute
	// DefaultOutcomeBytes bounds the outcomes a memory store keeps in all.
	DefaultOutcomeBytes = 64 << 20
)

// Use is what a store records of a continuation's use: with which answers
// it was resumed, whether that resume has ended, and the lease of the
// replica running it.
type Use struct {
	// Answers is the SHA-256 of the answers it was resumed with.
	Answers [sha256.Size]byte
	// Finished reports that the resume ended: its outcome is kept (or
	// was not, or is no longer).
	Finished bool
	// RunningUntil is, while the resume runs, when it must have ended:
	// the execution's remaining time budget and a margin. It decides only
	// for a use recorded without a lease (Fence 0, by an older release):
	// past it, the replica that ran it is presumed to have stopped before
	// keeping its outcome.
	RunningUntil time.Time
	// Fence is the fencing token of the lease's latest holder (1 for the
	// replica that used the continuation, one more per takeover; 0: no
	// lease recorded).
	Fence uint64
	// Held reports that the lease is live: the replica running the
	// resume renews it.
	Held bool
}

// Lapsed reports whether the resume is running (not finished) under a
// lease that lapsed: its replica stopped renewing it, and a retry with the
// same answers may take it over.
func (u *Use) Lapsed() bool { return !u.Finished && u.Fence > 0 && !u.Held }

// Takeovers is how many times the resume was taken over.
func (u *Use) Takeovers() int {
	if u.Fence == 0 {
		return 0
	}
	return int(u.Fence - 1)
}

const (
	markRunning  = 'r'
	markFinished = 'f'
	markLen      = 1 + 8 + sha256.Size
	outcomeLabel = "ptc resume outcome v1"
)

func (u Use) mark() []byte {
	b := make([]byte, markLen)
	b[0] = markRunning
	if u.Finished {
		b[0] = markFinished
	}
	binary.BigEndian.PutUint64(b[1:], uint64(u.RunningUntil.UnixNano()))
	copy(b[9:], u.Answers[:])
	return b
}

// running reports whether a mark records a resume still running (a Store
// reads only this of a mark).
func running(mark []byte) bool { return len(mark) > 0 && mark[0] == markRunning }

// parseUse decodes a store's record; a mark it cannot read (empty: it
// expired as it was read) is a finished use with no answers, whose
// outcome is not kept.
func parseUse(rec Record) *Use {
	b := rec.Mark
	u := &Use{Finished: true, Fence: rec.Fence, Held: rec.Held}
	if len(b) != markLen || (b[0] != markRunning && b[0] != markFinished) {
		return u
	}
	u.Finished = b[0] == markFinished
	u.RunningUntil = time.Unix(0, int64(binary.BigEndian.Uint64(b[1:])))
	copy(u.Answers[:], b[9:])
	return u
}

// Consume uses a continuation up, recording the digest of the answers it
// is resumed with and when the resume must have ended (runningUntil). It
// succeeds once per continuation (on every replica that shares the
// store): then it returns nil, and the caller holds the resume's lease
// with fencing token 1 (see Lease). Afterwards it returns the use
// recorded, for the caller to tell a retry from another resume (see
// Keep) or to take a lapsed resume over (TakeOver).
func (m *Manager) Consume(ctx context.Context, o *Opened, answers [sha256.Size]byte, runningUntil time.Time) (*Use, *fault.Error) {
	first, recorded, err := m.used.Consume(ctx, o.PauseID, Use{Answers: answers, RunningUntil: runningUntil}.mark(), m.cfg.Lease, o.Expires)
	if err != nil {
		return nil, fault.Reject(fault.CodeUnavailable, "the state store is unavailable: %v", err)
	}
	if !first {
		return parseUse(recorded), nil
	}
	return nil, nil
}

// Lease returns how long a resume's lease lasts without a renewal, and
// how often its holder renews it.
func (m *Manager) Lease() (ttl, renew time.Duration) { return m.cfg.Lease, m.cfg.LeaseRenew }

// MaxTakeovers is how many times one resume may be taken over.
func (m *Manager) MaxTakeovers() int { return m.cfg.MaxTakeovers }

// Renew extends the lease of the holder of fencing token fence on the
// resume of o. ErrFenced (wrapped) means the holder lost it: the resume
// was taken over or ended, and the holder must stop.
func (m *Manager) Renew(ctx context.Context, o *Opened, fence uint64) error {
	return m.used.Renew(ctx, o.PauseID, fence, m.cfg.Lease)
}

// TakeOver takes over the resume of o recorded as use, whose lease
// lapsed: on success the caller holds the lease with the fencing token
// returned and runs the resume again. false means someone else took it
// over (or renewed it, or finished it) first: read the use again.
func (m *Manager) TakeOver(ctx context.Context, o *Opened, use *Use) (uint64, bool, *fault.Error) {
	fence, err := m.used.TakeOver(ctx, o.PauseID, use.Fence, m.cfg.Lease)
	switch {
	case errors.Is(err, ErrFenced):
		return 0, false, nil
	case err != nil:
		return 0, false, fault.Reject(fault.CodeUnavailable, "the state store is unavailable: %v", err)
	}
	return fence, true, nil
}

// Used returns the recorded use of a continuation, nil when it was not
// used.
func (m *Manager) Used(ctx context.Context, o *Opened) (*Use, *fault.Error) {
	rec, err := m.used.Used(ctx, o.PauseID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fault.Reject(fault.CodeUnavailable, "the state store is unavailable: %v", err)
	}
	return parseUse(rec), nil
}

// Retention is how long the outcome of a resume is kept.
func (m *Manager) Retention() time.Duration { return m.cfg.OutcomeRetention }

// Keep records that the resume of o with answers ended, and keeps its
// outcome (encrypted and signed under the continuation's key) for the
// retention period, never beyond the continuation's expiry, so that a
// retry with the same continuation and answers gets it; a stored state
// is dropped then (a takeover needs it until this point). A nil outcome
// records the end only. Only the holder of the latest fencing token
// (fence) writes: for a stale holder (the resume was taken over) Keep
// writes nothing and returns ErrFenced (wrapped).
func (m *Manager) Keep(ctx context.Context, o *Opened, fence uint64, answers [sha256.Size]byte, outcome []byte) error {
	until := m.cfg.Now().Add(m.cfg.OutcomeRetention)
	if o.Expires.Before(until) {
		until = o.Expires
	}
	var body []byte
	if outcome != nil && m.cfg.Now().Before(until) {
		var err error
		if body, err = sealOutcome(o.key, o.pid, outcome); err != nil {
			return err
		}
	}
	if err := m.used.Finish(ctx, o.PauseID, fence, Use{Answers: answers, Finished: true}.mark(), body, until, o.Expires); err != nil {
		return err
	}
	if o.stored {
		_ = m.cfg.Store.Delete(ctx, o.PauseID)
	}
	return nil
}

// Outcome returns the outcome kept for o; false when none is kept.
func (m *Manager) Outcome(ctx context.Context, o *Opened) ([]byte, bool, *fault.Error) {
	b, err := m.used.Outcome(ctx, o.PauseID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, fault.Reject(fault.CodeUnavailable, "the state store is unavailable: %v", err)
	}
	plain, err := openOutcome(o.key, o.pid, b, max(m.cfg.MaxStateBytes, 256<<20))
	if err != nil {
		return nil, false, &fault.Error{Code: fault.CodeInternal, Message: "the state store holds an outcome that is not this continuation's: " + err.Error()}
	}
	return plain, true, nil
}

// outcomeIV is the AES-CTR IV of an outcome: derived from the pause id
// under its own label, never the pause id itself (the state's IV under
// the same key).
func outcomeIV(pid [pauseIDLen]byte) [pauseIDLen]byte {
	sum := sha256.Sum256(append([]byte(outcomeLabel), pid[:]...))
	var iv [pauseIDLen]byte
	copy(iv[:], sum[:])
	return iv
}

func outcomeMAC(k derived, pid [pauseIDLen]byte, body []byte) []byte {
	mac := hmac.New(sha256.New, k.mac)
	mac.Write([]byte(outcomeLabel))
	mac.Write(pid[:])
	mac.Write(body)
	return mac.Sum(nil)
}

// sealOutcome compresses, encrypts and signs an outcome:
// AES-256-CTR(flate(outcome)) followed by its HMAC-SHA256.
func sealOutcome(k derived, pid [pauseIDLen]byte, outcome []byte) ([]byte, error) {
	body, err := encrypt(k, outcomeIV(pid), outcome)
	if err != nil {
		return nil, err
	}
	return append(body, outcomeMAC(k, pid, body)...), nil
}

func openOutcome(k derived, pid [pauseIDLen]byte, b []byte, limit int) ([]byte, error) {
	if len(b) < sha256.Size {
		return nil, errors.New("too short")
	}
	body, mac := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !hmac.Equal(outcomeMAC(k, pid, body), mac) {
		return nil, errors.New("its signature does not match")
	}
	return decrypt(k, outcomeIV(pid), body, limit)
}
