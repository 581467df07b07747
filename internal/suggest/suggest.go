// Package suggest finds the name a typo was meant to be: the "did you
// mean" of ptcd's configuration keys and of the ptc command's flags. It
// imports nothing of ptc.
package suggest

import "sort"

// Closest returns the candidate nearest to name by edit distance when it
// is near enough to be a typo (one edit, two for names of five characters
// or more), or "" when none is; ties go to the first in alphabetical
// order.
func Closest(name string, candidates []string) string {
	limit := 1
	if len(name) >= 5 {
		limit = 2
	}
	cands := append([]string(nil), candidates...)
	sort.Strings(cands)
	best, bestD := "", limit+1
	for _, a := range cands {
		if d := distance(name, a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
