// Package ipc is the transport between a supervisor and one worker
// process: framed, bounded, message-agnostic, and built for the lowest
// round-trip latency this host allows.
//
// # Frames
//
// A frame is a 12-byte header — the payload length (uint32) and a tag
// (uint64), little-endian — and the payload. The transport does not look
// into payloads; the tag routes a frame to the Mailbox of that tag, or to
// Options.Handler when no mailbox claims it. Both sides bound the payload
// (Options.MaxFrameBytes): an oversized frame is refused on sending and
// fails the connection on receiving, before anything is allocated for it;
// the buffer of a large frame grows as its bytes arrive, so a peer that
// announces a large frame and sends little of it costs little.
//
// # Threads, not the netpoller
//
// A Conn reads one pipe and writes another with non-blocking descriptors
// and poll(2) on the calling goroutine's own thread, never the Go
// netpoller: the kernel wakes the thread that waits, and no goroutine
// hands the frame to another. A goroutine in Serve hands frames to the
// Handler in place; a Handler that answers at once (Send) answers from the
// same thread. A goroutine waiting for a reply in
// Mailbox.Next reads the connection itself whenever no other goroutine
// does, so the reply goes from the system call to the waiter — the
// worker's VM goroutine sends its tool call and reads the answer with no
// hand-off at all. While a mailbox reads, Serve stands back for 1 ms,
// doubling up to 8 ms while mailboxes keep reading (one wasted wake-up per
// step back); while none does, Serve reads what arrives, so a peer can
// always write and the frames of a mailbox whose owner is busy wait in
// its queue. Serve waits parked in the runtime's poller (an epoll set
// watching the read end one-shot, re-armed only when Serve waits), not in
// poll(2): a goroutine blocked in a system call keeps its P, and with
// Serve and a mailbox both blocked a 2-P process has none free, so sysmon
// took one back after 20 µs on every call and woke a thread to run it.
//
// Frames sent while another goroutine writes are queued and written with
// its frames in one system call (Send), and Queue plus Flush write frames
// started together in one; Serve writes the answers a Handler queued for
// the frames of one read together. Frames up to 64 KiB are read into one
// buffer and handed out in place (no copy, no allocation); only frames a
// reader takes for another goroutine's mailbox are copied.
//
// # Spinning before blocking
//
// On an idle host a thread blocked in poll sleeps on a CPU that sleeps
// too, and waking it costs more than the crossing itself (a pipe round
// trip: 15–17 µs idle on the project's 2-vCPU VM against 6 µs when the
// CPUs are busy anyway). A goroutine waiting in Mailbox.Next that finds
// the pipe empty therefore first retries the non-blocking read for up to
// Options.SpinBudget (DefaultSpinBudget, 50 µs) before it polls: the
// worker's lane right after it sent a tool call, the supervisor's
// execution goroutine right after it answered one or sent an Execute.
// With both sides on CPUs of their own a round trip then costs 8.4 µs at
// the median (BenchmarkRoundTrip, peer=mailbox, with each side pinned to
// a CPU) where blocking costs what the wake-up costs. The spin adapts so
// that it never costs a loaded host throughput and an idle one nothing:
//
//   - it is off while the host is oversubscribed: more threads runnable
//     than CPUs, or a one-minute load average above the number of CPUs
//     plus one, since the spinning sides of an exchange count in it
//     (/proc/loadavg, read with pread at most once a millisecond on a
//     descriptor opened with the connection). There a spinning thread
//     takes the CPU its peer needs to answer — the kernel may place a
//     woken peer on the waker's CPU when none is idle — and forcing the
//     spin costs 1–2 µs at the median and more in the mean
//     (spin=on-whatever-load);
//   - it is off after spins that fail: a spin that catches its frame
//     adds two to a score, one that runs out of budget takes one away,
//     and the reader spins while the score is positive; at zero it
//     probes with one spin after 1, 2, 4, … 64 waits. A spin during
//     which the thread had the CPU less than half the time (it was
//     descheduled) sets the score to zero at once;
//   - each try is one read(2) — no poll first, no sched_yield between
//     tries, which would hand whole time slices to any runnable thread,
//     niced ones included; the spin checks Close, the connection's
//     failure and the caller's context between tries;
//   - a blocked wait costs nothing, so an idle connection costs at most
//     one spin per wait and no CPU while it waits (scripts/idle-cpu.sh:
//     0.00 % of a core for an idle ptcd, as before).
//
// The CPU time a thread spent spinning is counted per mailbox
// (Mailbox.SpinCPU), read from the thread's CPU clock, so that the worker
// leaves it out of the script's CPU time: a wait is not work.
//
// # Failure and shutdown
//
// A peer that exits or is killed ends the stream: Serve, every Next and
// every write return ErrPeerClosed. A peer that stops reading fails
// writes after Options.WriteTimeout. Close wakes every goroutine blocked
// in the connection (an eventfd in every poll) and the descriptors are
// closed when the last of them has left, so no thread stays blocked on a
// descriptor that could be reused. The connection starts no goroutines
// of its own.
//
// # Why pipes
//
// Measured on the project's 2-vCPU host under load (BenchmarkFloor,
// medians of five runs), a round trip between two processes costs about
// 6 µs over a pair of pipes or a futex ping-pong on shared memory, 12 µs
// over a Unix socket pair and 20 µs through the netpoller; polling an
// eventfd beside the pipe (so that a reader can be woken) makes it 7.5 µs.
// Spinning on shared memory answers in 0.5 µs when both sides have a core
// and takes 110 µs when they share one, which a loaded 2-core host does
// often. A shared-memory ring with futex wake-ups would save at most the
// poll, while a hostile worker could rewrite a frame the supervisor is
// reading and its death would need separate detection; pipes give the
// same latency with the kernel's copy and end-of-stream; spinning on the
// pipe (above) gives a spinning reader what spinning on shared memory
// would, one read(2) per try, without either. A round trip
// through this package costs 8 µs (BenchmarkRoundTrip, wait=mailbox) —
// the pipe-and-poll floor — and 2.4 context switches; the worker pool's
// structure before it (netpoller, a goroutine per call on each side)
// costs 50–60 µs and 10 context switches in the same benchmark.
//
// Package ipc imports only the standard library and golang.org/x/sys.
package ipc
