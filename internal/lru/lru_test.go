package lru

import "testing"

func TestCache(t *testing.T) {
	var evicted []string
	c := New[string, int](2, func(k string, _ int) { evicted = append(evicted, k) })
	c.Add("a", 1)
	c.Add("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatal("a missing")
	}
	c.Add("c", 3) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Fatal("b not evicted")
	}
	c.Add("a", 10)
	if v, _ := c.Get("a"); v != 10 || c.Len() != 2 {
		t.Fatalf("update: %d len %d", v, c.Len())
	}
	if len(evicted) != 1 || evicted[0] != "b" {
		t.Fatalf("evicted %v", evicted)
	}
	if h, m := c.Stats(); h != 2 || m != 1 {
		t.Fatalf("hits %d misses %d", h, m)
	}
	if New[int, int](0, nil).cap != 1 {
		t.Fatal("capacity below 1")
	}
}
