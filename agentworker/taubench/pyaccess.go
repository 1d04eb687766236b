package taubench

import (
	"fmt"
	"strings"
	"sync"
)

// Python-style access to values inside tools. Failures carry the text
// Python would put in the exception, so that "Error: <message>" matches the
// reference's generic failure observation.

// item is v[k] for a dict v (KeyError shows the repr of the key).
func item(v any, k string) (any, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, notSubscriptable(v)
	}
	x, ok := o.Get(k)
	if !ok {
		return nil, fmt.Errorf("%s", appendPyStrRepr(nil, k))
	}
	return x, nil
}

// itemKey is v[key] where the key is any value (a tool argument).
func itemKey(v any, key any) (any, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, notSubscriptable(v)
	}
	k, ok, err := dictKey(key)
	if err != nil {
		return nil, err
	}
	if ok {
		if x, found := o.Get(k); found {
			return x, nil
		}
	}
	return nil, fmt.Errorf("%s", appendRepr(nil, key))
}

// path walks nested dict keys.
func path(v any, keys ...string) (any, error) {
	var err error
	for _, k := range keys {
		if v, err = item(v, k); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func notSubscriptable(v any) error {
	if _, ok := v.(string); ok {
		return fmt.Errorf("string indices must be integers, not 'str'")
	}
	if _, ok := v.([]any); ok {
		return fmt.Errorf("list indices must be integers or slices, not str")
	}
	return fmt.Errorf("'%s' object is not subscriptable", pyTypeName(v))
}

// dictKey reports how a value acts as a key of a string-keyed dict: a string
// is itself; numbers, booleans and None never match; lists and dicts are
// unhashable (TypeError).
func dictKey(v any) (string, bool, error) {
	switch x := v.(type) {
	case string:
		return x, true, nil
	case []any, *Object:
		return "", false, fmt.Errorf("unhashable type: '%s'", pyTypeName(v))
	}
	return "", false, nil
}

// in is `key in dict` for a dict of string keys.
func in(key any, d any) (bool, error) {
	o, ok := d.(*Object)
	if !ok {
		return false, fmt.Errorf("argument of type '%s' is not iterable", pyTypeName(d))
	}
	k, ok, err := dictKey(key)
	if err != nil || !ok {
		return false, err
	}
	return o.Has(k), nil
}

// contains is Python's `sub in s` for strings.
func contains(s, sub any) (bool, error) {
	str, ok := s.(string)
	if !ok {
		return false, fmt.Errorf("argument of type '%s' is not iterable", pyTypeName(s))
	}
	subs, ok := sub.(string)
	if !ok {
		return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", pyTypeName(sub))
	}
	return strings.Contains(str, subs), nil
}

// list returns v as a list (iteration over dicts/strings is not needed by
// the tools, so those are TypeErrors here).
func list(v any) ([]any, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("'%s' object is not iterable", pyTypeName(v))
	}
	return l, nil
}

// pyLen is len(v).
func pyLen(v any) (int, error) {
	switch x := v.(type) {
	case []any:
		return len(x), nil
	case *Object:
		return x.Len(), nil
	case string:
		return len([]rune(x)), nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", pyTypeName(v))
}

// pyErr wraps a Python-style exception text as a tool error observation.
func pyErr(err error) error { return toolErr(err.Error()) }

// jsonResult is json.dumps(v) as a tool result.
func jsonResult(v any) (string, error) {
	bp := resultBufs.Get().(*[]byte)
	b := appendJSON((*bp)[:0], v)
	out := string(b)
	if cap(b) <= maxPooledResult {
		*bp = b
		resultBufs.Put(bp)
	}
	return out, nil
}

// resultBufs holds the buffers tool results are encoded into, so that a
// result does not grow a new one from nothing on every call.
var resultBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledResult is the largest buffer kept for reuse.
const maxPooledResult = 64 << 10
