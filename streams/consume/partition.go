package consume

import (
	"slices"
	"strconv"
)

// partitionFilters are the filters of partition p's durable: each of the
// stage's filters with the partition token.
func partitionFilters(filters []string, p int) []string {
	out := make([]string, len(filters))
	for i, f := range filters {
		out[i] = f + "." + strconv.Itoa(p)
	}
	return out
}

// assigned is the partitions, of n, that member self works when the live
// members are members (self included or not): partition p belongs to the
// (p mod k)-th member in sorted order, so k members get n/k each, and
// every member computes the same split from the same list.
func assigned(self string, members []string, n int) []int {
	ms := append([]string(nil), members...)
	found := false
	for _, m := range ms {
		found = found || m == self
	}
	if !found {
		ms = append(ms, self)
	}
	slices.Sort(ms)
	idx := 0
	for i, m := range ms {
		if m == self {
			idx = i
		}
	}
	var out []int
	for p := 0; p < n; p++ {
		if p%len(ms) == idx {
			out = append(out, p)
		}
	}
	return out
}
