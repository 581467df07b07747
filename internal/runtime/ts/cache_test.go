package ts

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		sources    []string
		wantHits   uint64
		wantMisses uint64
		wantLen    int
	}{
		{"hit on repeat", 4, []string{"return 1", "return 1", "return 1"}, 2, 1, 1},
		{"distinct sources miss", 4, []string{"return 1", "return 2", "return 3"}, 0, 3, 3},
		{"evicts least recently used", 2, []string{"return 1", "return 2", "return 1", "return 3", "return 2"}, 1, 4, 2},
		{"recently used survives", 2, []string{"return 1", "return 2", "return 1", "return 3", "return 1"}, 2, 3, 2},
		{"syntax errors are cached", 4, []string{"return (", "return ("}, 1, 1, 1},
		{"zero size uses the default", 0, []string{"return 1", "return 1"}, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(tt.size)
			for _, src := range tt.sources {
				if _, err := c.transpile(src); err != nil {
					var se *syntaxError
					if !errors.As(err, &se) {
						t.Fatalf("transpile(%q): %v", src, err)
					}
				}
			}
			st := c.stats()
			if st.Hits != tt.wantHits || st.Misses != tt.wantMisses || st.Len != tt.wantLen {
				t.Errorf("stats = %+v, want hits %d misses %d len %d", st, tt.wantHits, tt.wantMisses, tt.wantLen)
			}
		})
	}
}

func TestCacheReturnsSameProgram(t *testing.T) {
	c := newCache(8)
	a, err := c.transpile("const x: number = 1; return x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.transpile("const x: number = 1; return x")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("cache hit returned a different program")
	}
	if got := runProgram(t, b, "", false, nil).JSON; got != "1" {
		t.Errorf("cached program result = %s", got)
	}
}

// TestCacheConcurrent transpiles a few sources from many goroutines; run
// with -race. Each source is transpiled once.
func TestCacheConcurrent(t *testing.T) {
	c := newCache(16)
	const sources, goroutines = 4, 8
	var wg sync.WaitGroup
	errs := make(chan error, sources*goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		// Each goroutine ends after its loop; wg.Wait joins them.
		go func() {
			defer wg.Done()
			for i := 0; i < sources; i++ {
				p, err := c.transpile(fmt.Sprintf("const n: number = %d;\nreturn n", i))
				if err == nil && p.Compiled == nil {
					err = errors.New("program without compiled code")
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := c.stats()
	if st.Misses != sources || st.Hits != sources*(goroutines-1) {
		t.Errorf("stats = %+v, want %d misses and %d hits", st, sources, sources*(goroutines-1))
	}
}
