package worker

import (
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/ipc"
)

// Frames travel over internal/ipc: a pipe each way, read and written on
// the threads of the goroutines that wait (see docs/workers.md). Each
// frame is one protobuf message (internal/workerproto) with an ipc tag
// that routes it on the receiving side:
//
//   - worker → supervisor: the execution's slot (its number on this
//     connection), so the supervisor's goroutine running the execution
//     reads its frames itself from the mailbox of that tag; 0 for Ready;
//   - supervisor → worker: the lane that runs the execution (1 to
//     ExecutionsPerWorker), whose goroutine reads its Execute frame and
//     the answers to its calls itself; cancelTag(lane) for a Cancel, which
//     the worker's Serve (or whichever goroutine reads) handles at once;
//     0 for Init.
//
// The payload's slot field names the execution within its lane: a late
// answer to an execution that has ended is recognised and dropped.

// defaultMaxFrameBytes bounds one frame on either side: a tool result of
// bridge.MaxResultBytes plus room for the envelope.
const defaultMaxFrameBytes = bridge.MaxResultBytes + 1<<20

const (
	// controlTag carries Init and Ready.
	controlTag = 0
	// cancelBit marks a Cancel frame's tag; the rest is the lane.
	cancelBit = 1 << 32
)

// cancelTag is the tag of a Cancel frame for lane.
func cancelTag(lane uint64) uint64 { return cancelBit | lane }

// frameBufs recycles marshalling buffers: Send and Queue copy the frame
// (or have written it) by the time they return.
var frameBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// sendFrame marshals m and sends it with tag; queue holds it back until
// the connection's next write (Queue) instead of writing it now.
func sendFrame(c *ipc.Conn, tag uint64, m proto.Message, queue bool) error {
	bp := frameBufs.Get().(*[]byte)
	b, err := proto.MarshalOptions{}.MarshalAppend((*bp)[:0], m)
	if err == nil {
		if queue {
			err = c.Queue(tag, b)
		} else {
			err = c.Send(tag, b)
		}
	}
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		frameBufs.Put(bp)
	}
	return err
}
