package ipc

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The physical floor of a round trip between two processes on this
// machine: an 8-byte message there and back, with nothing else on the way.
// Each child is the test binary re-executed (as the worker pool does), so
// both sides are Go processes with a Go scheduler.

// BenchmarkFloor measures one round trip per op, over:
//   - a Unix socket pair with blocking reads and writes on locked OS
//     threads (no netpoller);
//   - the same socket pair through the Go netpoller (net.FileConn, as the
//     worker pool reads and writes today);
//   - a pair of pipes, blocking, on locked OS threads (io=blocking), and
//     the same with each read preceded by a poll of the pipe and an
//     eventfd (io=poll), which is how a reader that can be woken waits;
//   - a futex ping-pong over a shared memfd page: each side sleeps in
//     FUTEX_WAIT until the other stores the next sequence number
//     (wait=sleep), or first spins for up to 50 µs (wait=spin).
//
// "p50-ns" is the median round trip.
func BenchmarkFloor(b *testing.B) {
	b.Run("transport=socketpair/io=blocking", func(b *testing.B) {
		fd, cf := socketpair(b)
		defer unix.Close(fd)
		startChild(b, "floor-socket-blocking", cf)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		benchRoundTrips(b, func(v uint64) uint64 { return blockingRoundTrip(b, fd, fd, v) })
	})
	b.Run("transport=socketpair/io=netpoller", func(b *testing.B) {
		fd, cf := socketpair(b)
		f := os.NewFile(uintptr(fd), "parent")
		conn, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		startChild(b, "floor-socket-netpoller", cf)
		var buf [8]byte
		benchRoundTrips(b, func(v uint64) uint64 {
			binary.LittleEndian.PutUint64(buf[:], v)
			if _, err := conn.Write(buf[:]); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(conn, buf[:]); err != nil {
				b.Fatal(err)
			}
			return binary.LittleEndian.Uint64(buf[:])
		})
	})
	b.Run("transport=pipe/io=blocking", func(b *testing.B) {
		down, up := pipeChild(b, "floor-pipe-blocking")
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		benchRoundTrips(b, func(v uint64) uint64 { return blockingRoundTrip(b, down, up, v) })
	})
	b.Run("transport=pipe/io=poll", func(b *testing.B) {
		down, up := pipeChild(b, "floor-pipe-poll")
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p := newPoller(b, up)
		defer p.close()
		benchRoundTrips(b, func(v uint64) uint64 {
			var buf [8]byte
			binary.LittleEndian.PutUint64(buf[:], v)
			if err := writeFull(down, buf[:]); err != nil {
				b.Fatal(err)
			}
			if err := p.readFull(buf[:]); err != nil {
				b.Fatal(err)
			}
			return binary.LittleEndian.Uint64(buf[:])
		})
	})
	for _, spin := range []bool{false, true} {
		name := "transport=futex/wait=sleep"
		prog := "floor-futex-sleep"
		if spin {
			name, prog = "transport=futex/wait=spin", "floor-futex-spin"
		}
		b.Run(name, func(b *testing.B) {
			mem, f := sharedPage(b)
			defer unix.Munmap(mem)
			pp := pingPongOn(mem, spin)
			c := startChild(b, prog, f)
			defer func() {
				pp.stop()
				_ = c.wait()
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			benchRoundTrips(b, func(v uint64) uint64 {
				seq := uint32(v)
				pp.ping.post(seq)
				pp.pong.await(seq)
				return v
			})
		})
	}
}

// BenchmarkFloorAfterIdle is BenchmarkFloor's blocking pipe round trip
// with both sides idle for gap before each one, as between the requests
// of an idle host: both threads are asleep when the message leaves. On a
// virtual machine whose idle vCPUs halt, the wake-ups cost more than the
// crossing; every process crossing of an execution pays this floor after
// a pause, and an in-process engine does not.
func BenchmarkFloorAfterIdle(b *testing.B) {
	for _, gap := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		b.Run("transport=pipe/io=blocking/gap="+gap.String(), func(b *testing.B) {
			down, up := pipeChild(b, "floor-pipe-blocking")
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			benchRoundTripsAfter(b, gap, func(v uint64) uint64 { return blockingRoundTrip(b, down, up, v) })
		})
	}
}

// pipeChild starts the child prog with the read end of one pipe and the
// write end of another, and returns this side's ends: down writes to the
// child, up reads from it. Both are closed when the benchmark ends.
func pipeChild(b *testing.B, prog string) (down, up int) {
	var d, u [2]int
	if err := unix.Pipe2(d[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	if err := unix.Pipe2(u[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = unix.Close(d[1])
		_ = unix.Close(u[0])
	})
	startChild(b, prog, os.NewFile(uintptr(d[0]), "down"), os.NewFile(uintptr(u[1]), "up"))
	return d[1], u[0]
}

// benchRoundTrips runs b.N round trips after a warm-up and reports the
// median.
func benchRoundTrips(b *testing.B, rt func(v uint64) uint64) { benchRoundTripsAfter(b, 0, rt) }

// benchRoundTripsAfter is benchRoundTrips with both sides idle for gap
// before each timed round trip: ns/op includes the gap, "p50-ns" and
// "p99-ns" do not.
func benchRoundTripsAfter(b *testing.B, gap time.Duration, rt func(v uint64) uint64) {
	for i := uint64(1); i <= 1000; i++ {
		if got := rt(i); got != i {
			b.Fatalf("round trip %d came back as %d", i, got)
		}
	}
	ds := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := uint64(i) + 1001
		if gap > 0 {
			time.Sleep(gap)
		}
		start := time.Now()
		if got := rt(v); got != v {
			b.Fatalf("round trip %d came back as %d", v, got)
		}
		ds[i] = time.Since(start)
	}
	b.StopTimer()
	reportMedian(b, ds)
}

// reportMedian reports the median of ds as "p50-ns" and the 99th
// percentile as "p99-ns".
func reportMedian(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds()), "p99-ns")
}

// blockingRoundTrip writes v to w and reads 8 bytes back from r.
func blockingRoundTrip(tb testing.TB, w, r int, v uint64) uint64 {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	if err := writeFull(w, buf[:]); err != nil {
		tb.Fatal(err)
	}
	if err := readFull(r, buf[:]); err != nil {
		tb.Fatal(err)
	}
	return binary.LittleEndian.Uint64(buf[:])
}

func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Read(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.EOF
		}
		b = b[n:]
	}
	return nil
}

func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// echoBlocking echoes 8-byte messages from descriptor r to w on a locked
// thread with blocking system calls, until r reaches EOF.
func echoBlocking(r, w int) int {
	runtime.LockOSThread()
	_ = unix.SetNonblock(r, false)
	_ = unix.SetNonblock(w, false)
	var buf [8]byte
	for {
		if err := readFull(r, buf[:]); err != nil {
			return 0
		}
		if err := writeFull(w, buf[:]); err != nil {
			return 1
		}
	}
}

// poller reads a descriptor after polling it together with an eventfd.
type poller struct {
	fds [2]unix.PollFd
}

func newPoller(tb testing.TB, fd int) *poller {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		if tb != nil {
			tb.Fatal(err)
		}
		return nil
	}
	return &poller{fds: [2]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(efd), Events: unix.POLLIN}}}
}

func (p *poller) close() { _ = unix.Close(int(p.fds[1].Fd)) }

// readFull polls, then reads, until b is full.
func (p *poller) readFull(b []byte) error {
	for len(b) > 0 {
		if _, err := unix.Poll(p.fds[:], -1); err != nil && err != unix.EINTR {
			return err
		}
		n, err := unix.Read(int(p.fds[0].Fd), b)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.EOF
		}
		b = b[n:]
	}
	return nil
}

func floorSocketBlocking() int { return echoBlocking(3, 3) }

func floorPipePoll() int {
	runtime.LockOSThread()
	p := newPoller(nil, 3)
	if p == nil {
		return 2
	}
	var buf [8]byte
	for {
		if err := p.readFull(buf[:]); err != nil {
			return 0
		}
		if err := writeFull(4, buf[:]); err != nil {
			return 1
		}
	}
}

func floorPipeBlocking() int { return echoBlocking(3, 4) }

func floorSocketNetpoller() int {
	f := os.NewFile(3, "socket")
	conn, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return 2
	}
	var buf [8]byte
	for {
		if _, err := io.ReadFull(conn, buf[:]); err != nil {
			return 0
		}
		if _, err := conn.Write(buf[:]); err != nil {
			return 1
		}
	}
}

// sharedPage returns one page of a memfd mapped shared, and the memfd as
// a file for a child.
func sharedPage(tb testing.TB) ([]byte, *os.File) {
	tb.Helper()
	fd, err := unix.MemfdCreate("ptc-ipc-floor", unix.MFD_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	if err := unix.Ftruncate(fd, 4096); err != nil {
		tb.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		tb.Fatal(err)
	}
	return mem, os.NewFile(uintptr(fd), "ipc-floor-memfd")
}

// futexWord is one direction of a futex ping-pong: a sequence number and
// a flag telling the poster that the other side sleeps on it. Both live in
// shared memory.
type futexWord struct {
	seq, sleeping *uint32
	spin          bool
}

const (
	futexWait = 0 // FUTEX_WAIT, shared (no FUTEX_PRIVATE_FLAG)
	futexWake = 1 // FUTEX_WAKE
	// stopSeq tells the child to exit.
	stopSeq = ^uint32(0)
)

// post publishes seq and wakes the other side if it sleeps. The store to
// seq and the load of sleeping are sequentially consistent, as are the
// waiter's store of sleeping and load of seq, so a wake-up is never lost.
func (w futexWord) post(seq uint32) {
	atomic.StoreUint32(w.seq, seq)
	if atomic.LoadUint32(w.sleeping) != 0 {
		_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w.seq)), futexWake, 1, 0, 0, 0)
	}
}

// await returns once seq (or stopSeq) is posted, and reports which.
func (w futexWord) await(seq uint32) bool {
	if w.spin {
		deadline := time.Now().Add(50 * time.Microsecond)
		for i := 0; ; i++ {
			if v := atomic.LoadUint32(w.seq); v == seq || v == stopSeq {
				return v == seq
			}
			if i%64 == 63 && time.Now().After(deadline) {
				break
			}
		}
	}
	timeout := unix.Timespec{Nsec: int64(100 * time.Millisecond)}
	for {
		atomic.StoreUint32(w.sleeping, 1)
		v := atomic.LoadUint32(w.seq)
		if v == seq || v == stopSeq {
			atomic.StoreUint32(w.sleeping, 0)
			return v == seq
		}
		_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w.seq)), futexWait, uintptr(v), uintptr(unsafe.Pointer(&timeout)), 0, 0)
		atomic.StoreUint32(w.sleeping, 0)
		if os.Getppid() == 1 {
			return false // the parent died
		}
	}
}

// pingPong is the two directions, each on its own cache line.
type pingPong struct{ ping, pong futexWord }

func pingPongOn(mem []byte, spin bool) pingPong {
	word := func(off int) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	return pingPong{
		ping: futexWord{seq: word(0), sleeping: word(4), spin: spin},
		pong: futexWord{seq: word(128), sleeping: word(132), spin: spin},
	}
}

func (p pingPong) stop() { p.ping.post(stopSeq) }

func floorFutex(spin bool) int {
	runtime.LockOSThread()
	mem, err := unix.Mmap(3, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return 2
	}
	pp := pingPongOn(mem, spin)
	for seq := uint32(1); ; seq++ {
		if !pp.ping.await(seq) {
			return 0
		}
		pp.pong.post(seq)
	}
}
