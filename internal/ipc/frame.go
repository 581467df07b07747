package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderBytes is the size of a frame header: the payload length (uint32,
// little-endian) and the tag (uint64, little-endian).
const HeaderBytes = 12

// DefaultMaxFrameBytes bounds one payload when Options.MaxFrameBytes is
// zero.
const DefaultMaxFrameBytes = 64 << 20

// appendHeader appends the header of a frame of n payload bytes.
func appendHeader(b []byte, tag uint64, n int) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	return binary.LittleEndian.AppendUint64(b, tag)
}

// parseHeader reads a header from b (at least HeaderBytes long).
func parseHeader(b []byte) (n int64, tag uint64) {
	return int64(binary.LittleEndian.Uint32(b)), binary.LittleEndian.Uint64(b[4:])
}

var (
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("ipc: the connection is closed")
	// ErrPeerClosed is returned once the peer closed its end or died: a
	// read reached the end of the stream or a write found no reader.
	ErrPeerClosed = errors.New("ipc: the peer closed the connection or exited")
	// ErrWriteTimeout is returned when the peer left no room to write for
	// longer than Options.WriteTimeout: it stopped reading (stuck or
	// hostile). The connection is failed; close it and stop the peer.
	ErrWriteTimeout = errors.New("ipc: the peer stopped reading for longer than the write timeout; stop it and start another")
	// ErrMailboxBusy is returned by Mailbox.Next when another goroutine is
	// already waiting on the same mailbox.
	ErrMailboxBusy = errors.New("ipc: another goroutine is already waiting on this mailbox; use one mailbox per waiter")
	// ErrTagInUse is returned by Conn.Mailbox for a tag that already has
	// a mailbox.
	ErrTagInUse = errors.New("ipc: the tag already has a mailbox; close it first")
)

// MailboxFullError reports a frame for a mailbox that already holds
// Options.MaxMailboxBytes of frames its owner has not taken: the
// connection fails (the peer sends more than its owner asked for).
type MailboxFullError struct {
	// Tag is the mailbox's tag, Max the limit.
	Tag uint64
	Max int64
}

// Error implements the error interface.
func (e *MailboxFullError) Error() string {
	return fmt.Sprintf("ipc: the peer sent more than %d bytes the owner of mailbox %d did not take; it floods the connection, stop it", e.Max, e.Tag)
}

// FrameTooLargeError reports a frame whose payload exceeds the limit: on
// sending it is refused and nothing is written; on receiving it fails the
// connection (the peer broke the protocol).
type FrameTooLargeError struct {
	// Size is the payload size of the frame, Max the limit.
	Size, Max int64
}

// Error implements the error interface.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("ipc: a frame of %d bytes is larger than the %d allowed; send less at once or raise MaxFrameBytes on both sides", e.Size, e.Max)
}
