package ipc

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzFrames feeds arbitrary bytes to a connection as its peer's stream:
// reading must never panic, hand out exactly the frames a plain parser
// finds, and end with ErrPeerClosed or a FrameTooLargeError.
func FuzzFrames(f *testing.F) {
	f.Add([]byte{}, uint16(16))
	f.Add(appendHeader(nil, 1, 3), uint16(16))
	f.Add(append(appendHeader(nil, 7, 3), 'a', 'b', 'c'), uint16(12))
	f.Add(append(append(appendHeader(nil, 7, 1), 'x'), appendHeader(nil, 9, 2000)...), uint16(64))
	f.Add(append(appendHeader(nil, 2, 100), make([]byte, 100)...), uint16(20))
	f.Fuzz(func(t *testing.T, stream []byte, bufSize uint16) {
		const max = 1000
		aR, aW, bR, bW := pipes(t)
		_ = unix.Close(bR)
		c, err := New(aR, aW, Options{MaxFrameBytes: max, ReadBufferBytes: int(bufSize)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			_ = writeFull(bW, stream)
			_ = unix.Close(bW)
		}()
		type frame struct {
			tag uint64
			p   []byte
		}
		var got []frame
		c.opt.Handler = func(tag uint64, p []byte) error {
			got = append(got, frame{tag, append([]byte(nil), p...)})
			return nil
		}
		serr := c.Serve()

		// A plain parser of the same stream.
		var want []frame
		var wantErr error = ErrPeerClosed
		for rest := stream; len(rest) >= HeaderBytes; {
			n, tag := parseHeader(rest)
			if n > max {
				wantErr = &FrameTooLargeError{Size: n, Max: max}
				break
			}
			if int64(len(rest)-HeaderBytes) < n {
				break
			}
			want = append(want, frame{tag, rest[HeaderBytes : HeaderBytes+n]})
			rest = rest[HeaderBytes+n:]
		}
		var tl *FrameTooLargeError
		switch {
		case errors.Is(wantErr, ErrPeerClosed) && !errors.Is(serr, ErrPeerClosed),
			errors.As(wantErr, &tl) && !errors.As(serr, &tl):
			t.Fatalf("Serve: %v, want %v", serr, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames handed out, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].tag != want[i].tag || !bytes.Equal(got[i].p, want[i].p) {
				t.Fatalf("frame %d differs", i)
			}
		}
	})
}
