package taubench

import (
	"slices"
	"strconv"
	"strings"
)

// appendCanon renders v the way τ-bench's fingerprint does: Python's str()
// of the value turned into nested tuples, objects as (key, value) pairs
// sorted by key, arrays in order.
func appendCanon(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "None"...)
	case bool:
		if x {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return pyFloat(b, x)
	case string:
		return appendPyStrRepr(b, x)
	case []any:
		b = append(b, '(')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendCanon(b, e)
		}
		if len(x) == 1 {
			b = append(b, ',')
		}
		return append(b, ')')
	case *Object:
		b = append(b, '(')
		var buf [16]int
		idx := sortedKeyIndex(x, buf[:0])
		for n, i := range idx {
			if n > 0 {
				b = append(b, ", "...)
			}
			b = appendCanonPair(b, x.Keys[i], x.Vals[i])
		}
		if len(idx) == 1 {
			b = append(b, ',')
		}
		return append(b, ')')
	}
	return append(b, "None"...)
}

func appendCanonPair(b []byte, k string, v any) []byte {
	b = append(b, '(')
	b = appendPyStrRepr(b, k)
	b = append(b, ", "...)
	b = appendCanon(b, v)
	return append(b, ')')
}

// sortedKeyIndex returns the positions of o's keys in sorted key order.
func sortedKeyIndex(o *Object, idx []int) []int {
	for i := range o.Keys {
		idx = append(idx, i)
	}
	if len(idx) > 24 {
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(o.Keys[a], o.Keys[b]) })
		return idx
	}
	for i := 1; i < len(idx); i++ { // insertion sort: records have few keys
		for j := i; j > 0 && o.Keys[idx[j]] < o.Keys[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}
