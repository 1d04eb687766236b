package taubench

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseJSON decodes one JSON document into the package's value model:
// objects keep their key order (a repeated key keeps its first position and
// its last value, as Python does) and numbers keep their integer/float kind.
// Python's extensions NaN, Infinity and -Infinity are accepted; input
// must be valid UTF-8.
func ParseJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrBadData)
	}
	p := parser{b: data}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadData, err)
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, fmt.Errorf("%w: extra data at offset %d", ErrBadData, p.i)
	}
	return v, nil
}

const maxDepth = 512

type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{p.i}, a...)...)
}

func (p *parser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *parser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errf("nesting too deep")
	}
	if p.i >= len(p.b) {
		return nil, p.errf("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 't':
		if p.lit("true") {
			return true, nil
		}
	case c == 'f':
		if p.lit("false") {
			return false, nil
		}
	case c == 'n':
		if p.lit("null") {
			return nil, nil
		}
	case c == 'N':
		if p.lit("NaN") {
			return math.NaN(), nil
		}
	case c == 'I':
		if p.lit("Infinity") {
			return math.Inf(1), nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if p.lit("-Infinity") {
			return math.Inf(-1), nil
		}
		return p.number()
	}
	return nil, p.errf("unexpected character %q", p.b[p.i])
}

func (p *parser) object(depth int) (any, error) {
	p.i++ // {
	o := &Object{}
	var idx map[string]int // key index for large objects (top-level tables)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return o, nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errf("expected object key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errf("expected ':'")
		}
		p.i++
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		switch {
		case idx != nil:
			if i, ok := idx[k]; ok {
				o.Vals[i] = v
			} else {
				idx[k] = len(o.Keys)
				o.Keys = append(o.Keys, k)
				o.Vals = append(o.Vals, v)
			}
		case len(o.Keys) >= 16:
			idx = make(map[string]int, 64)
			for i, key := range o.Keys {
				idx[key] = i
			}
			if i, ok := idx[k]; ok {
				o.Vals[i] = v
			} else {
				idx[k] = len(o.Keys)
				o.Keys = append(o.Keys, k)
				o.Vals = append(o.Vals, v)
			}
		default:
			o.Set(k, v)
		}
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.errf("unterminated object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return o, nil
		default:
			return nil, p.errf("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	p.i++ // [
	a := []any{}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.errf("unterminated array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.errf("expected ',' or ']'")
		}
	}
}

func (p *parser) number() (any, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if digits() == 0 {
		return nil, p.errf("bad number")
	}
	if p.b[intStart] == '0' && p.i-intStart > 1 {
		return nil, p.errf("leading zero in number")
	}
	isFloat := false
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		isFloat = true
		if digits() == 0 {
			return nil, p.errf("bad fraction")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		isFloat = true
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errf("bad exponent")
		}
	}
	s := string(p.b[start:p.i])
	if isFloat {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return nil, p.errf("bad number %q", s)
		}
		return f, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, p.errf("integer %s out of range", s)
	}
	return n, nil
}

// isRangeErr tells strconv's out-of-range error (a *NumError wrapping
// ErrRange) from a syntax error.
func isRangeErr(err error) bool { return errors.Is(err, strconv.ErrRange) }

func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", p.errf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.b) {
			break
		}
		e := p.b[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) && p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
				save := p.i
				p.i += 2
				r2, ok := p.hex4()
				if ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						buf = utf8.AppendRune(buf, d)
						continue
					}
				}
				p.i = save
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.errf("bad escape \\%c", e)
		}
	}
	return "", p.errf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}
