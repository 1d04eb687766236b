package taubench

import (
	"fmt"
	"math"
	"strconv"
)

// Python arithmetic on the value model: int op int stays int, anything
// involving a float is a float, booleans count as the integers 0 and 1.
// Errors carry Python's TypeError texts (without the "Error: " prefix).

func pyTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *Object:
		return "dict"
	}
	return "object"
}

// asNum classifies a number: isInt with i, or a float f.
func asNum(v any) (i int64, f float64, isInt, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, 0, true, true
	case bool:
		if x {
			return 1, 0, true, true
		}
		return 0, 0, true, true
	case float64:
		return 0, x, false, true
	}
	return 0, 0, false, false
}

func binop(op string, a, b any) (any, error) {
	ai, af, aInt, aok := asNum(a)
	bi, bf, bInt, bok := asNum(b)
	if !aok || !bok {
		if op == "+" {
			if sa, ok := a.(string); ok {
				if sb, ok := b.(string); ok {
					return sa + sb, nil
				}
				return nil, fmt.Errorf("can only concatenate str (not %q) to str", pyTypeName(b))
			}
		}
		return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
	}
	if aInt && bInt {
		switch op {
		case "+":
			return ai + bi, nil
		case "-":
			return ai - bi, nil
		case "*":
			return ai * bi, nil
		}
	}
	if aInt {
		af = float64(ai)
	}
	if bInt {
		bf = float64(bi)
	}
	switch op {
	case "+":
		return af + bf, nil
	case "-":
		return af - bf, nil
	case "*":
		return af * bf, nil
	}
	return nil, fmt.Errorf("unsupported operator %s", op)
}

func pyAdd(a, b any) (any, error) { return binop("+", a, b) }
func pySub(a, b any) (any, error) { return binop("-", a, b) }
func pyMul(a, b any) (any, error) { return binop("*", a, b) }

func pyNeg(a any) (any, error) {
	i, f, isInt, ok := asNum(a)
	switch {
	case !ok:
		return nil, fmt.Errorf("bad operand type for unary -: '%s'", pyTypeName(a))
	case isInt:
		return -i, nil
	}
	return -f, nil
}

func pyAbs(a any) (any, error) {
	i, f, isInt, ok := asNum(a)
	switch {
	case !ok:
		return nil, fmt.Errorf("bad operand type for abs(): '%s'", pyTypeName(a))
	case isInt:
		if i < 0 {
			return -i, nil
		}
		return i, nil
	}
	return math.Abs(f), nil
}

// pyCmp compares two numbers; -1, 0, 1. A non-number is a TypeError with op
// as the operator shown.
func pyCmp(op string, a, b any) (int, error) {
	ai, af, aInt, aok := asNum(a)
	bi, bf, bInt, bok := asNum(b)
	if !aok || !bok {
		if sa, ok := a.(string); ok {
			if sb, ok := b.(string); ok {
				switch {
				case sa < sb:
					return -1, nil
				case sa > sb:
					return 1, nil
				}
				return 0, nil
			}
		}
		return 0, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
	}
	if aInt && bInt {
		switch {
		case ai < bi:
			return -1, nil
		case ai > bi:
			return 1, nil
		}
		return 0, nil
	}
	x, y := af, bf
	if aInt {
		x = float64(ai)
	}
	if bInt {
		y = float64(bi)
	}
	switch {
	case x < y:
		return -1, nil
	case x > y:
		return 1, nil
	}
	return 0, nil
}

func pyLess(a, b any) (bool, error) {
	c, err := pyCmp("<", a, b)
	return c < 0, err
}

// pyEq is Python's == for the value model (1 == 1.0, True == 1).
func pyEq(a, b any) bool {
	if _, _, _, aok := asNum(a); aok {
		if _, _, _, bok := asNum(b); bok {
			c, _ := pyCmp("==", a, b)
			return c == 0
		}
		return false
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEq(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys {
			w, ok := y.Get(k)
			if !ok || !pyEq(x.Vals[i], w) {
				return false
			}
		}
		return true
	}
	return false
}

// pyRound2 is Python's round(x, 2): integers come back unchanged, floats
// are rounded to the nearest multiple of 0.01 (ties to even).
func pyRound2(v any) (any, error) {
	i, f, isInt, ok := asNum(v)
	switch {
	case !ok:
		return nil, fmt.Errorf("type %s doesn't define __round__ method", pyTypeName(v))
	case isInt:
		if _, isBool := v.(bool); isBool {
			return i, nil
		}
		return v, nil
	}
	return round2(f), nil
}

func round2(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 2, 64), 64)
	if err != nil {
		return f
	}
	if r == 0 && math.Signbit(f) {
		return math.Copysign(0, -1)
	}
	return r
}
