package adversarial

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// rssOf returns VmRSS of a process in bytes.
func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			_, err := fmt.Sscan(f[1], &kb)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// childrenOf lists the processes whose parent is pid (ptcd's workers).
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		var child int
		if _, err := fmt.Sscan(e.Name(), &child); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscan(s[i+1:], &state, &ppid); err == nil && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// workerRSS returns the number of ptcd's worker processes and their
// summed RSS.
func (s *server) workerRSS() (n int, total int64) {
	for _, w := range childrenOf(s.pid()) {
		if r, err := rssOf(w); err == nil {
			n++
			total += r
		}
	}
	return n, total
}

// rssSampler records the highest RSS of a process until stopped.
type rssSampler struct {
	stopc chan struct{}
	done  chan struct{}
	peak  int64
}

// sampleRSS starts sampling pid's RSS every 20ms; stop returns the peak.
func sampleRSS(pid int) *rssSampler {
	r := &rssSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	r.peak, _ = rssOf(pid)
	// The goroutine ends when stop closes stopc.
	go func() {
		defer close(r.done)
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-r.stopc:
				return
			case <-tk.C:
				if v, err := rssOf(pid); err == nil && v > r.peak {
					r.peak = v
				}
			}
		}
	}()
	return r
}

func (r *rssSampler) stop() int64 {
	close(r.stopc)
	<-r.done
	return r.peak
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
