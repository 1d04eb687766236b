package taubench

// A JSON value as the domains hold it: nil, bool, int64 (a JSON integer),
// float64 (a JSON number written with '.' or an exponent), string, []any or
// *Object. Integers and floats are kept apart because τ-bench's fingerprint
// distinguishes 250 from 250.0.

// Object is a JSON object that keeps its keys in insertion order.
type Object struct {
	Keys []string
	Vals []any
}

// Len is the number of keys.
func (o *Object) Len() int { return len(o.Keys) }

func (o *Object) index(k string) int {
	for i, key := range o.Keys {
		if key == k {
			return i
		}
	}
	return -1
}

// Get returns the value stored under k.
func (o *Object) Get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	if i := o.index(k); i >= 0 {
		return o.Vals[i], true
	}
	return nil, false
}

// Has reports whether k is a key.
func (o *Object) Has(k string) bool { return o != nil && o.index(k) >= 0 }

// Set overwrites k in place or appends it as the last key.
func (o *Object) Set(k string, v any) {
	if i := o.index(k); i >= 0 {
		o.Vals[i] = v
		return
	}
	o.Keys = append(o.Keys, k)
	o.Vals = append(o.Vals, v)
}

// Delete removes k, keeping the order of the other keys.
func (o *Object) Delete(k string) {
	if i := o.index(k); i >= 0 {
		o.Keys = append(o.Keys[:i:i], o.Keys[i+1:]...)
		o.Vals = append(o.Vals[:i:i], o.Vals[i+1:]...)
	}
}

// NewObject builds an object from alternating keys and values.
func NewObject(kv ...any) *Object {
	o := &Object{Keys: make([]string, 0, len(kv)/2), Vals: make([]any, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Keys = append(o.Keys, kv[i].(string))
		o.Vals = append(o.Vals, kv[i+1])
	}
	return o
}

// DeepCopy copies a value so that the copy shares no mutable part with v.
func DeepCopy(v any) any {
	switch x := v.(type) {
	case *Object:
		c := &Object{Keys: make([]string, len(x.Keys)), Vals: make([]any, len(x.Vals))}
		copy(c.Keys, x.Keys)
		for i, e := range x.Vals {
			c.Vals[i] = DeepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = DeepCopy(e)
		}
		return c
	default:
		return v
	}
}

// Equal reports whether a and b are equal under τ-bench's canonical form:
// key order is ignored, list order matters, integers never equal floats and
// booleans are not numbers.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		if !ok || len(x.Keys) != len(y.Keys) {
			return false
		}
		for i, k := range x.Keys {
			w, ok := y.Get(k)
			if !ok || !Equal(x.Vals[i], w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (x != x && y != y))
	default:
		return a == b
	}
}
