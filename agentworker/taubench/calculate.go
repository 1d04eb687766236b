package taubench

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Calculate evaluates an arithmetic expression with Python semantics and
// returns τ-bench's calculate result: the value as a float, rounded to two
// decimals, in Python's repr. Allowed characters are digits, + - * / ( ) .
// and space; ** and // are accepted as in Python. The error text is the
// observation without its "Error: " prefix.
func Calculate(expr string) (string, error) {
	for _, c := range expr {
		if !strings.ContainsRune("0123456789+-*/(). ", c) {
			return "", errors.New("invalid characters in expression")
		}
	}
	toks, err := lexCalc(expr)
	if err != nil {
		return "", err
	}
	p := &calcParser{toks: toks}
	v, err := p.expr()
	if err != nil {
		return "", err
	}
	if p.pos != len(p.toks) {
		return "", errSyntax
	}
	var f float64
	switch v.kind {
	case cInt:
		f, err = intToFloat(v.i)
		if err != nil {
			return "", err
		}
	case cFloat:
		f = v.f
	default:
		return "", errors.New("float() argument must be a string or a real number, not 'tuple'")
	}
	return string(pyFloat(nil, round2(f))), nil
}

var errSyntax = errors.New("invalid syntax (<string>, line 1)")

const maxPowBits = 1 << 20

type calcKind int

const (
	cInt calcKind = iota
	cFloat
	cTuple
)

type calcVal struct {
	kind calcKind
	i    *big.Int
	f    float64
}

func (v calcVal) typeName() string {
	return [...]string{"int", "float", "tuple"}[v.kind]
}

type calcTok struct {
	op  string // operator or paren; "" for numbers
	num calcVal
}

func lexCalc(s string) ([]calcTok, error) {
	var toks []calcTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c == '*' || c == '/':
			if i+1 < len(s) && s[i+1] == c {
				toks = append(toks, calcTok{op: s[i : i+2]})
				i += 2
			} else {
				toks = append(toks, calcTok{op: s[i : i+1]})
				i++
			}
		case c == '+' || c == '-' || c == '(' || c == ')':
			toks = append(toks, calcTok{op: s[i : i+1]})
			i++
		default: // digit or '.'
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			intPart := s[i:j]
			isFloat := false
			if j < len(s) && s[j] == '.' {
				isFloat = true
				j++
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
			}
			lit := s[i:j]
			if lit == "." {
				return nil, errSyntax
			}
			if j < len(s) && (s[j] == '.' || (s[j] >= '0' && s[j] <= '9')) {
				return nil, errSyntax
			}
			if isFloat {
				toks = append(toks, calcTok{num: calcVal{kind: cFloat, f: parseFloatLit(lit)}})
			} else {
				if len(intPart) > 1 && intPart[0] == '0' && strings.Trim(intPart, "0") != "" {
					return nil, errors.New("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)")
				}
				n, _ := new(big.Int).SetString(intPart, 10)
				toks = append(toks, calcTok{num: calcVal{kind: cInt, i: n}})
			}
			i = j
		}
	}
	return toks, nil
}

func parseFloatLit(lit string) float64 {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !isRangeErr(err) {
		return math.NaN()
	}
	return f
}

type calcParser struct {
	toks []calcTok
	pos  int
}

func (p *calcParser) peek() string {
	if p.pos < len(p.toks) && p.toks[p.pos].op != "" {
		return p.toks[p.pos].op
	}
	return ""
}

func (p *calcParser) expr() (calcVal, error) {
	v, err := p.term()
	if err != nil {
		return v, err
	}
	for op := p.peek(); op == "+" || op == "-"; op = p.peek() {
		p.pos++
		r, err := p.term()
		if err != nil {
			return v, err
		}
		if v, err = calcBin(op, v, r); err != nil {
			return v, err
		}
	}
	return v, nil
}

func (p *calcParser) term() (calcVal, error) {
	v, err := p.factor()
	if err != nil {
		return v, err
	}
	for op := p.peek(); op == "*" || op == "/" || op == "//"; op = p.peek() {
		p.pos++
		r, err := p.factor()
		if err != nil {
			return v, err
		}
		if v, err = calcBin(op, v, r); err != nil {
			return v, err
		}
	}
	return v, nil
}

func (p *calcParser) factor() (calcVal, error) {
	if op := p.peek(); op == "+" || op == "-" {
		p.pos++
		v, err := p.factor()
		if err != nil {
			return v, err
		}
		switch v.kind {
		case cTuple:
			return v, fmt.Errorf("bad operand type for unary %s: 'tuple'", op)
		case cInt:
			if op == "-" {
				return calcVal{kind: cInt, i: new(big.Int).Neg(v.i)}, nil
			}
		case cFloat:
			if op == "-" {
				return calcVal{kind: cFloat, f: -v.f}, nil
			}
		}
		return v, nil
	}
	return p.power()
}

func (p *calcParser) power() (calcVal, error) {
	v, err := p.atom()
	if err != nil {
		return v, err
	}
	if p.peek() == "**" {
		p.pos++
		r, err := p.factor()
		if err != nil {
			return v, err
		}
		return calcBin("**", v, r)
	}
	return v, nil
}

func (p *calcParser) atom() (calcVal, error) {
	if p.pos >= len(p.toks) {
		return calcVal{}, errSyntax
	}
	t := p.toks[p.pos]
	var v calcVal
	switch t.op {
	case "":
		p.pos++
		v = t.num
	case "(":
		p.pos++
		if p.peek() == ")" {
			p.pos++
			v = calcVal{kind: cTuple}
			break
		}
		inner, err := p.expr()
		if err != nil {
			return inner, err
		}
		if p.peek() != ")" {
			return inner, errSyntax
		}
		p.pos++
		v = inner
	default:
		return calcVal{}, errSyntax
	}
	if p.peek() == "(" { // a call such as "2 (3)": Python parses it, then fails
		if _, err := p.atom(); err != nil {
			return v, err
		}
		return v, fmt.Errorf("'%s' object is not callable", v.typeName())
	}
	if p.pos < len(p.toks) && p.toks[p.pos].op == "" {
		return v, errSyntax
	}
	return v, nil
}

func intToFloat(i *big.Int) (float64, error) {
	f, acc := new(big.Float).SetInt(i).Float64()
	if math.IsInf(f, 0) && acc != big.Exact {
		return 0, errors.New("int too large to convert to float")
	}
	return f, nil
}

func calcBin(op string, a, b calcVal) (calcVal, error) {
	if a.kind == cTuple || b.kind == cTuple {
		if op == "+" && a.kind == cTuple && b.kind == cTuple {
			return a, nil
		}
		if op == "*" && (a.kind == cInt || b.kind == cInt) {
			return calcVal{kind: cTuple}, nil
		}
		return a, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, a.typeName(), b.typeName())
	}
	if a.kind == cInt && b.kind == cInt {
		x, y := a.i, b.i
		switch op {
		case "+":
			return calcVal{kind: cInt, i: new(big.Int).Add(x, y)}, nil
		case "-":
			return calcVal{kind: cInt, i: new(big.Int).Sub(x, y)}, nil
		case "*":
			return calcVal{kind: cInt, i: new(big.Int).Mul(x, y)}, nil
		case "/":
			if y.Sign() == 0 {
				return a, errors.New("division by zero")
			}
			f, _ := new(big.Rat).SetFrac(x, y).Float64()
			if math.IsInf(f, 0) {
				return a, errors.New("integer division result too large for a float")
			}
			return calcVal{kind: cFloat, f: f}, nil
		case "//":
			if y.Sign() == 0 {
				return a, errors.New("integer division or modulo by zero")
			}
			q, m := new(big.Int).QuoRem(x, y, new(big.Int))
			if m.Sign() != 0 && (m.Sign() < 0) != (y.Sign() < 0) {
				q.Sub(q, big.NewInt(1))
			}
			return calcVal{kind: cInt, i: q}, nil
		case "**":
			if y.Sign() >= 0 {
				if y.BitLen() > 32 || int64(x.BitLen())*y.Int64() > maxPowBits {
					return a, errors.New("exponent too large")
				}
				return calcVal{kind: cInt, i: new(big.Int).Exp(x, y, nil)}, nil
			}
		}
	}
	x, err := a.float()
	if err != nil {
		return a, err
	}
	y, err := b.float()
	if err != nil {
		return a, err
	}
	switch op {
	case "+":
		return calcVal{kind: cFloat, f: x + y}, nil
	case "-":
		return calcVal{kind: cFloat, f: x - y}, nil
	case "*":
		return calcVal{kind: cFloat, f: x * y}, nil
	case "/":
		if y == 0 {
			return a, errors.New("float division by zero")
		}
		return calcVal{kind: cFloat, f: x / y}, nil
	case "//":
		if y == 0 {
			return a, errors.New("float floor division by zero")
		}
		return calcVal{kind: cFloat, f: pyFloorDiv(x, y)}, nil
	case "**":
		if x == 0 && y < 0 {
			return a, errors.New("0.0 cannot be raised to a negative power")
		}
		if x < 0 && y != math.Trunc(y) {
			return a, errors.New("float() argument must be a string or a real number, not 'complex'")
		}
		r := math.Pow(x, y)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return a, errors.New("(34, 'Numerical result out of range')")
		}
		return calcVal{kind: cFloat, f: r}, nil
	}
	return a, errSyntax
}

func (v calcVal) float() (float64, error) {
	if v.kind == cInt {
		return intToFloat(v.i)
	}
	return v.f, nil
}

// pyFloorDiv is Python's float floor division.
func pyFloorDiv(x, y float64) float64 {
	mod := math.Mod(x, y)
	div := (x - mod) / y
	if mod != 0 && (y < 0) != (mod < 0) {
		div -= 1
	}
	if div == 0 {
		return math.Copysign(0, x/y)
	}
	fl := math.Floor(div)
	if div-fl > 0.5 {
		fl++
	}
	return fl
}
