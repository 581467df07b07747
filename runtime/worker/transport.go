package worker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/bridge"
)

// defaultMaxFrameBytes bounds one frame on either side: a tool result of
// bridge.MaxResultBytes plus room for the envelope.
const defaultMaxFrameBytes = bridge.MaxResultBytes + 1<<20

// frameReader reads length-delimited frames of bounded size.
type frameReader struct {
	r   *bufio.Reader
	opt protodelim.UnmarshalOptions
}

func newFrameReader(r io.Reader, maxBytes int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), opt: protodelim.UnmarshalOptions{MaxSize: int64(maxBytes)}}
}

// read reads one frame into m. io.EOF means the peer closed cleanly.
func (f *frameReader) read(m proto.Message) error {
	proto.Reset(m)
	err := f.opt.UnmarshalFrom(f.r, m)
	var big *protodelim.SizeTooLargeError
	if errors.As(err, &big) {
		return fmt.Errorf("frame of %d bytes is larger than the %d allowed", big.Size, f.opt.MaxSize)
	}
	return err
}

// frameWriter writes frames; it is safe for concurrent use and keeps the
// order of the calls that hold its lock.
type frameWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	// before, when set, runs before each write (e.g. to set a deadline).
	before func()
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// write sends one frame.
func (f *frameWriter) write(m proto.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.before != nil {
		f.before()
	}
	var err error
	f.buf, err = proto.MarshalOptions{}.MarshalAppend(f.buf[:0], m)
	if err != nil {
		return err
	}
	var hdr [binary.MaxVarintLen64]byte
	if _, err := f.w.Write(protowire.AppendVarint(hdr[:0], uint64(len(f.buf)))); err != nil {
		return err
	}
	if _, err := f.w.Write(f.buf); err != nil {
		return err
	}
	if cap(f.buf) > 1<<20 {
		f.buf = nil
	}
	return f.w.Flush()
}
