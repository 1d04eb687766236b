package taubench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// pyFloat renders f as Python's repr(float) does: shortest round-trip
// digits, ".0" for integral values, exponent form when the decimal exponent
// is below -4 or at least 16.
func pyFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	abs := math.Abs(f)
	if abs < 1e-4 || abs >= 1e16 {
		return strconv.AppendFloat(b, f, 'e', -1, 64) // 1e+16, 1.5e-05
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

// pyJSONFloat renders f as Python's json.dumps does.
func pyJSONFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	return pyFloat(b, f)
}

// pyStr is Python's str() of a value, used where the reference formats a
// value into a message with an f-string.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	default:
		return string(appendRepr(nil, v))
	}
}

// appendRepr renders v as Python's repr() of the equivalent Python value
// (dicts and lists as Python literals). It is used for messages; the
// fingerprint uses appendCanon.
func appendRepr(b []byte, v any) []byte {
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
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendRepr(b, e)
		}
		return append(b, ']')
	case *Object:
		b = append(b, '{')
		for i, k := range x.Keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPyStrRepr(b, k)
			b = append(b, ": "...)
			b = appendRepr(b, x.Vals[i])
		}
		return append(b, '}')
	}
	return append(b, "?"...)
}

// appendPyStrRepr renders s as Python's repr(str).
func appendPyStrRepr(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\'' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '\'')
		b = append(b, s...)
		return append(b, '\'')
	}
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b = append(b, q)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == q || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'x', hexDigit[c>>4], hexDigit[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsPrint(r): // Python's str.isprintable, as far as Go knows Unicode
			b = append(b, s[i:i+n]...)
		case r < 0x100:
			b = append(b, '\\', 'x', hexDigit[r>>4], hexDigit[r&15])
		case r < 0x10000:
			b = append(b, '\\', 'u', hexDigit[r>>12&15], hexDigit[r>>8&15], hexDigit[r>>4&15], hexDigit[r&15])
		default:
			b = fmt.Appendf(b, "\\U%08x", r)
		}
		i += n
	}
	return append(b, q)
}

const hexDigit = "0123456789abcdef"

// appendJSON renders v as Python's json.dumps with default arguments:
// ", " and ": " separators, ASCII-only output with \uXXXX escapes, no HTML
// escaping, key order kept.
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return pyJSONFloat(b, x)
	case string:
		return appendJSONString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case *Object:
		b = append(b, '{')
		for i, k := range x.Keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendJSONString(b, k)
			b = append(b, ": "...)
			b = appendJSON(b, x.Vals[i])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// ToPyJSON renders v exactly as Python's json.dumps(v) would.
func ToPyJSON(v any) string { return string(appendJSON(nil, v)) }

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if plainJSON(c) {
			// A run that needs no escape is copied at once.
			j := i + 1
			for j < len(s) && plainJSON(s[j]) {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == 0x7f:
				b = appendU(b, rune(c))
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			b = appendU(appendU(b, r1), r2)
		} else {
			b = appendU(b, r)
		}
		i += n
	}
	return append(b, '"')
}

// plainJSON reports an ASCII byte appendJSONString copies as it is.
func plainJSON(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigit[r>>12&15], hexDigit[r>>8&15], hexDigit[r>>4&15], hexDigit[r&15])
}
