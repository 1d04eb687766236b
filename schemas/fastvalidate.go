package schemas

import (
	"encoding/json"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A fast path for Validate. The library decodes a payload into a tree of
// maps and json.Numbers, then checks integers through fmt and big.Rat:
// 8-22 µs and 50-100 allocations per event, on every hop. rein's schemas
// use a small part of JSON Schema, so fastValid checks the JSON bytes
// against the library's own compiled schema in one pass, without building
// the tree. It only ever says "valid" when the library would: anything it
// does not handle exactly (a keyword outside the subset, a duplicate or
// escaped key, a lone surrogate, invalid JSON) answers "not sure", and
// every failure goes to the library, which says why.
// fastvalidate_test.go checks the two against each other.

// verdict of one value against one schema.
type verdict uint8

const (
	vValid verdict = iota
	vInvalid
	vUnsure // not decided exactly: the library decides
)

// maxFastDepth bounds recursion; deeper documents go to the library.
const maxFastDepth = 64

// maxFastProps bounds the properties and required names of a schema,
// each tracked by one bit.
const maxFastProps = 64

// fnode is one compiled schema in the subset fastValid handles.
type fnode struct {
	always, never bool // true and false schemas
	types         jsonschema.Types
	hasTypes      bool
	enum          []any // strings, booleans, nil
	hasEnum       bool
	constant      any
	hasConst      bool
	allOf, anyOf  []*fnode
	oneOf         []*fnode
	not           *fnode
	ifs, then     *fnode
	elses         *fnode
	format        func(any) error

	required   []string
	props      map[string]prop
	addl       *fnode // nil: any member allowed
	checksObj  bool
	items      *fnode
	minItems   int // 0: no bound
	minLen     int
	maxLen     int
	pattern    jsonschema.Regexp
	needString bool // the decoded string is needed (pattern, enum, const, format)
	checksStr  bool

	min, max, exMin, exMax *big.Rat
	checksNum              bool
}

// prop is a property's schema and its bit in an object's seen set.
type prop struct {
	node *fnode
	bit  uint64
}

// handled are the exported fields of jsonschema.Schema that compileFast
// understands or that are only annotations; any other field set makes the
// schema (and so its event type) go to the library. A field a later
// version of the library adds is thus never ignored.
var handled = map[string]bool{
	"DraftVersion": true, "Location": true, "ID": true, "Bool": true, "Types": true, "Enum": true, "Const": true,
	"Not": true, "AllOf": true, "AnyOf": true, "OneOf": true, "If": true, "Then": true, "Else": true, "Format": true,
	"Required": true, "Properties": true, "AdditionalProperties": true, "Items2020": true, "MinItems": true,
	"MinLength": true, "MaxLength": true, "Pattern": true,
	"Maximum": true, "Minimum": true, "ExclusiveMaximum": true, "ExclusiveMinimum": true,
	"Title": true, "Description": true, "Default": true, "Comment": true, "ReadOnly": true, "WriteOnly": true,
	"Examples": true, "Deprecated": true,
}

var stringTypes = func() jsonschema.Types {
	var t jsonschema.Types
	t.Add("string")
	return t
}()

// compileFast translates a compiled schema, or returns nil when it uses
// anything outside the subset.
func compileFast(s *jsonschema.Schema) *fnode {
	if s == nil {
		return nil
	}
	if s.DraftVersion < 2019 {
		return nil
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && !handled[f.Name] && !v.Field(i).IsZero() {
			return nil
		}
	}
	n := &fnode{minLen: -1, maxLen: -1}
	if s.Bool != nil {
		n.always, n.never = *s.Bool, !*s.Bool
		return n
	}
	if s.Types != nil {
		n.types, n.hasTypes = *s.Types, true
	}
	scalar := func(x any) bool {
		switch x.(type) {
		case nil, string, bool:
			return true
		}
		return false
	}
	if s.Enum != nil {
		for _, x := range s.Enum.Values {
			if !scalar(x) {
				return nil
			}
		}
		n.enum, n.hasEnum = s.Enum.Values, true
	}
	if s.Const != nil {
		if !scalar(*s.Const) {
			return nil
		}
		n.constant, n.hasConst = *s.Const, true
	}
	sub := func(list []*jsonschema.Schema) ([]*fnode, bool) {
		out := make([]*fnode, len(list))
		for i, x := range list {
			if out[i] = compileFast(x); out[i] == nil {
				return nil, false
			}
		}
		return out, true
	}
	var ok bool
	if n.allOf, ok = sub(s.AllOf); !ok {
		return nil
	}
	if n.anyOf, ok = sub(s.AnyOf); !ok {
		return nil
	}
	if n.oneOf, ok = sub(s.OneOf); !ok {
		return nil
	}
	for _, p := range []struct {
		from *jsonschema.Schema
		to   **fnode
	}{{s.Not, &n.not}, {s.If, &n.ifs}, {s.Then, &n.then}, {s.Else, &n.elses}, {s.Items2020, &n.items}} {
		if p.from == nil {
			continue
		}
		if *p.to = compileFast(p.from); *p.to == nil {
			return nil
		}
	}
	if s.Format != nil {
		// Formats are checked on strings only, so the schema must admit
		// nothing else.
		if !n.hasTypes || n.types != stringTypes {
			return nil
		}
		n.format = s.Format.Validate
	}
	n.required = s.Required
	if len(n.required) > maxFastProps || len(s.Properties) > maxFastProps {
		return nil
	}
	if len(s.Properties) > 0 {
		n.props = make(map[string]prop, len(s.Properties))
		for k, x := range s.Properties {
			m := compileFast(x)
			if m == nil {
				return nil
			}
			n.props[k] = prop{node: m, bit: 1 << len(n.props)}
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		if !a {
			n.addl = &fnode{never: true}
		}
	case *jsonschema.Schema:
		if n.addl = compileFast(a); n.addl == nil {
			return nil
		}
	default:
		return nil
	}
	n.checksObj = len(n.required) > 0 || n.props != nil || n.addl != nil
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	n.pattern = s.Pattern
	n.needString = n.pattern != nil || n.hasEnum || n.hasConst || n.format != nil
	n.checksStr = n.needString || n.minLen >= 0 || n.maxLen >= 0
	n.min, n.max, n.exMin, n.exMax = s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum
	n.checksNum = n.min != nil || n.max != nil || n.exMin != nil || n.exMax != nil
	return n
}

// fastValid reports whether data certainly conforms to n. false means
// invalid or not sure: the caller asks the library.
func fastValid(n *fnode, data []byte) bool { return fastCheck(n, data) == vValid }

// fastCheck is the verdict on a whole document.
func fastCheck(n *fnode, data []byte) verdict {
	sc := scanner{data: data}
	end, v := sc.value(n, sc.ws(0), 0)
	if v == vUnsure || sc.ws(end) != len(data) {
		return vUnsure
	}
	return v
}

type scanner struct {
	data []byte
}

func (sc *scanner) ws(i int) int {
	for i < len(sc.data) {
		switch sc.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// JSON value kinds, as the library's types name them.
const (
	kNull = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// kindTypes is each kind as a jsonschema.Types bit; integerType the
// integer bit.
var kindTypes, integerType = func() ([6]jsonschema.Types, jsonschema.Types) {
	var out [6]jsonschema.Types
	for k, name := range [...]string{"null", "boolean", "number", "string", "array", "object"} {
		out[k].Add(name)
	}
	var integer jsonschema.Types
	integer.Add("integer")
	return out, integer
}()

// value checks the JSON value at data[i:] against n (nil: anything) and
// returns where it ends. It always scans the whole value, so that the
// syntax of the document is checked even past a failure; a syntax error
// is vUnsure with end -1.
func (sc *scanner) value(n *fnode, i, depth int) (int, verdict) {
	if depth > maxFastDepth || i >= len(sc.data) {
		return -1, vUnsure
	}
	if n == nil || n.always {
		return sc.skip(i, depth)
	}
	if n.never {
		end, v := sc.skip(i, depth)
		if v == vUnsure {
			return end, v
		}
		return end, vInvalid
	}
	var kind int
	switch c := sc.data[i]; {
	case c == '{':
		kind = kObject
	case c == '[':
		kind = kArray
	case c == '"':
		kind = kString
	case c == 't' || c == 'f':
		kind = kBool
	case c == 'n':
		kind = kNull
	case c == '-' || (c >= '0' && c <= '9'):
		kind = kNumber
	default:
		return -1, vUnsure
	}
	// The value's own keywords first.
	var end int
	res := vValid
	worse := func(v verdict) {
		if v > res {
			res = v
		}
	}
	switch kind {
	case kObject:
		end, res = sc.object(n, i, depth)
	case kArray:
		end, res = sc.array(n, i, depth)
	case kString:
		end, res = sc.str(n, i)
	case kNumber:
		end, res = sc.number(n, i)
	case kBool:
		end, res = sc.literal(n, i)
	case kNull:
		end, res = sc.literal(n, i)
	}
	if end < 0 {
		return -1, vUnsure
	}
	if n.hasTypes && !n.types.IsEmpty() && res != vUnsure {
		worse(sc.typeMatch(n.types, kind, i, end))
	}
	if res == vUnsure {
		return end, res
	}
	// Applicators, on the same bytes.
	check := func(m *fnode) verdict {
		_, v := sc.value(m, i, depth+1)
		return v
	}
	for _, m := range n.allOf {
		worse(check(m))
	}
	if len(n.anyOf) > 0 {
		got := vInvalid
		for _, m := range n.anyOf {
			switch check(m) {
			case vValid:
				got = vValid
			case vUnsure:
				return end, vUnsure
			}
		}
		worse(got)
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, m := range n.oneOf {
			switch check(m) {
			case vValid:
				matched++
			case vUnsure:
				return end, vUnsure
			}
		}
		if matched != 1 {
			worse(vInvalid)
		}
	}
	if n.not != nil {
		switch check(n.not) {
		case vValid:
			worse(vInvalid)
		case vUnsure:
			return end, vUnsure
		}
	}
	if n.ifs != nil {
		switch check(n.ifs) {
		case vValid:
			if n.then != nil {
				worse(check(n.then))
			}
		case vInvalid:
			if n.elses != nil {
				worse(check(n.elses))
			}
		default:
			return end, vUnsure
		}
	}
	return end, res
}

// typeMatch is the library's type rule: the value's kind, or integer for
// a number with an integral value.
func (sc *scanner) typeMatch(t jsonschema.Types, kind, i, end int) verdict {
	if t&kindTypes[kind] != 0 {
		return vValid
	}
	if kind == kNumber && t&integerType != 0 {
		lit := sc.data[i:end]
		if isPlainInt(lit) {
			return vValid
		}
		r, ok := new(big.Rat).SetString(string(lit))
		if ok && r.IsInt() {
			return vValid
		}
	}
	return vInvalid
}

// isPlainInt reports whether a JSON number has no fraction or exponent.
func isPlainInt(lit []byte) bool {
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// skip scans any value at data[i:] without checking it against a schema.
func (sc *scanner) skip(i, depth int) (int, verdict) {
	if depth > maxFastDepth || i >= len(sc.data) {
		return -1, vUnsure
	}
	switch c := sc.data[i]; {
	case c == '{':
		return sc.object(nil, i, depth)
	case c == '[':
		return sc.array(nil, i, depth)
	case c == '"':
		end, _, _, ok := sc.strEnd(i)
		if !ok {
			return -1, vUnsure
		}
		return end, vValid
	case c == 't' || c == 'f' || c == 'n':
		return sc.literal(nil, i)
	case c == '-' || (c >= '0' && c <= '9'):
		end := sc.numEnd(i)
		if end < 0 {
			return -1, vUnsure
		}
		return end, vValid
	}
	return -1, vUnsure
}

// literal scans true, false or null and checks enum and const.
func (sc *scanner) literal(n *fnode, i int) (int, verdict) {
	var val any
	var end int
	switch {
	case hasPrefix(sc.data[i:], "true"):
		val, end = true, i+4
	case hasPrefix(sc.data[i:], "false"):
		val, end = false, i+5
	case hasPrefix(sc.data[i:], "null"):
		val, end = nil, i+4
	default:
		return -1, vUnsure
	}
	if n == nil {
		return end, vValid
	}
	if n.hasConst && n.constant != val {
		return end, vInvalid
	}
	if n.hasEnum && !inEnum(n.enum, val) {
		return end, vInvalid
	}
	return end, vValid
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func inEnum(enum []any, v any) bool {
	for _, x := range enum {
		if x == v {
			return true
		}
	}
	return false
}

// numEnd returns the end of the JSON number at data[i:], or -1.
func (sc *scanner) numEnd(i int) int {
	d := sc.data
	digits := func(j int) int {
		k := j
		for k < len(d) && d[k] >= '0' && d[k] <= '9' {
			k++
		}
		return k
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(d) && d[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// number scans a number and checks its bounds as the library does (exact
// rationals), with int64 arithmetic when both sides are small integers.
func (sc *scanner) number(n *fnode, i int) (int, verdict) {
	end := sc.numEnd(i)
	if end < 0 {
		return -1, vUnsure
	}
	if n.hasConst || n.hasEnum {
		// Only scalar strings, booleans and null are compiled.
		return end, vInvalid
	}
	if !n.checksNum {
		return end, vValid
	}
	lit := sc.data[i:end]
	var num *big.Rat
	small, isSmall := int64(0), false
	if isPlainInt(lit) && len(lit) <= 18 {
		if x, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			small, isSmall = x, true
		}
	}
	cmp := func(bound *big.Rat) int {
		if isSmall && bound.IsInt() && bound.Num().IsInt64() {
			b := bound.Num().Int64()
			switch {
			case small < b:
				return -1
			case small > b:
				return 1
			}
			return 0
		}
		if bound.Sign() == 0 {
			return litSign(lit)
		}
		if num == nil {
			var ok bool
			if num, ok = new(big.Rat).SetString(string(lit)); !ok {
				return 2 // not comparable: unsure
			}
		}
		return num.Cmp(bound)
	}
	res := vValid
	for _, c := range []struct {
		bound *big.Rat
		bad   func(int) bool
	}{
		{n.min, func(c int) bool { return c < 0 }},
		{n.max, func(c int) bool { return c > 0 }},
		{n.exMin, func(c int) bool { return c <= 0 }},
		{n.exMax, func(c int) bool { return c >= 0 }},
	} {
		if c.bound == nil {
			continue
		}
		r := cmp(c.bound)
		if r == 2 {
			return end, vUnsure
		}
		if c.bad(r) {
			res = vInvalid
		}
	}
	return end, res
}

// litSign is the sign of a JSON number: rein's bounds are mostly 0, and
// a fraction such as latency_ms would otherwise cost a big.Rat.
func litSign(lit []byte) int {
	neg := lit[0] == '-'
	for _, c := range lit {
		if c == 'e' || c == 'E' {
			break
		}
		if c >= '1' && c <= '9' {
			if neg {
				return -1
			}
			return 1
		}
	}
	return 0
}

// strEnd finds the end of the string at data[i:] (after its closing
// quote) and tells whether it holds escapes and whether its raw bytes are
// valid UTF-8.
func (sc *scanner) strEnd(i int) (end int, escapes int, validUTF8 bool, ok bool) {
	d := sc.data
	ascii := true
	j := i + 1
	for j < len(d) {
		c := d[j]
		switch {
		case c == '"':
			validUTF8 = ascii || utf8.Valid(d[i+1:j])
			return j + 1, escapes, validUTF8, true
		case c == '\\':
			if j+1 >= len(d) {
				return -1, 0, false, false
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(d) {
					return -1, 0, false, false
				}
				for _, h := range d[j+2 : j+6] {
					if !isHex(h) {
						return -1, 0, false, false
					}
				}
				j += 6
			default:
				return -1, 0, false, false
			}
			escapes++
		case c < 0x20:
			return -1, 0, false, false
		default:
			if c >= 0x80 {
				ascii = false
			}
			j++
		}
	}
	return -1, 0, false, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// str scans a string and checks its length, pattern, enum, const and
// format on the string encoding/json would decode.
func (sc *scanner) str(n *fnode, i int) (int, verdict) {
	end, escapes, validUTF8, ok := sc.strEnd(i)
	if !ok {
		return -1, vUnsure
	}
	if !n.checksStr {
		return end, vValid
	}
	raw := sc.data[i+1 : end-1]
	if escapes > 0 || !validUTF8 {
		// Escapes or invalid UTF-8: let encoding/json decode it, exactly as
		// the library's reader does.
		var dec string
		if err := json.Unmarshal(sc.data[i:end], &dec); err != nil {
			return end, vUnsure
		}
		raw = []byte(dec)
	}
	runes := utf8.RuneCount(raw)
	if n.minLen >= 0 && runes < n.minLen || n.maxLen >= 0 && runes > n.maxLen {
		return end, vInvalid
	}
	if n.hasConst && !equalString(n.constant, raw) {
		return end, vInvalid
	}
	if n.hasEnum && !slices.ContainsFunc(n.enum, func(x any) bool { return equalString(x, raw) }) {
		return end, vInvalid
	}
	if n.pattern != nil || n.format != nil {
		s := string(raw)
		if n.pattern != nil && !n.pattern.MatchString(s) || n.format != nil && n.format(s) != nil {
			return end, vInvalid
		}
	}
	return end, vValid
}

// equalString reports whether an enum or const value is the string b.
func equalString(x any, b []byte) bool {
	s, ok := x.(string)
	return ok && s == string(b)
}

// array scans an array and checks every item against n.items.
func (sc *scanner) array(n *fnode, i, depth int) (int, verdict) {
	var items *fnode
	res := vValid
	minItems := 0
	if n != nil {
		items, minItems = n.items, n.minItems
		if n.hasConst || n.hasEnum {
			res = vInvalid
		}
	}
	j := sc.ws(i + 1)
	if j < len(sc.data) && sc.data[j] == ']' {
		if minItems > 0 {
			res = vInvalid
		}
		return j + 1, res
	}
	for count := 1; ; count++ {
		end, v := sc.value(items, j, depth+1)
		if v == vUnsure {
			return -1, vUnsure
		}
		if v == vInvalid {
			res = vInvalid
		}
		j = sc.ws(end)
		if j >= len(sc.data) {
			return -1, vUnsure
		}
		switch sc.data[j] {
		case ',':
			j = sc.ws(j + 1)
		case ']':
			if count < minItems {
				res = vInvalid
			}
			return j + 1, res
		default:
			return -1, vUnsure
		}
	}
}

// object scans an object and checks its members (properties, additional
// properties, required). A key given twice is "not sure" where its value
// is checked: encoding/json keeps the last, this scan sees both.
func (sc *scanner) object(n *fnode, i, depth int) (int, verdict) {
	checks := n != nil && n.checksObj
	res := vValid
	if n != nil && (n.hasConst || n.hasEnum) {
		res = vInvalid
	}
	var seen, present uint64
	var extra [][]byte // keys checked against additionalProperties
	j := sc.ws(i + 1)
	if j < len(sc.data) && sc.data[j] == '}' {
		j++
	} else {
		for {
			if j >= len(sc.data) || sc.data[j] != '"' {
				return -1, vUnsure
			}
			kend, escapes, validUTF8, ok := sc.strEnd(j)
			if !ok {
				return -1, vUnsure
			}
			key := sc.data[j+1 : kend-1]
			var sub *fnode
			if checks {
				if escapes > 0 || !validUTF8 {
					return -1, vUnsure
				}
				for r, name := range n.required {
					if name == string(key) {
						present |= 1 << r
					}
				}
				if p, ok := n.props[string(key)]; ok {
					if seen&p.bit != 0 {
						return -1, vUnsure
					}
					seen |= p.bit
					sub = p.node
				} else if n.addl != nil {
					sub = n.addl
					if !n.addl.never {
						for _, k := range extra {
							if string(k) == string(key) {
								return -1, vUnsure
							}
						}
						extra = append(extra, key)
					}
				}
			}
			j = sc.ws(kend)
			if j >= len(sc.data) || sc.data[j] != ':' {
				return -1, vUnsure
			}
			j = sc.ws(j + 1)
			end, v := sc.value(sub, j, depth+1)
			if v == vUnsure {
				return -1, vUnsure
			}
			if v == vInvalid {
				res = vInvalid
			}
			j = sc.ws(end)
			if j >= len(sc.data) {
				return -1, vUnsure
			}
			if sc.data[j] == '}' {
				j++
				break
			}
			if sc.data[j] != ',' {
				return -1, vUnsure
			}
			j = sc.ws(j + 1)
		}
	}
	if checks && present != (uint64(1)<<len(n.required))-1 {
		res = vInvalid
	}
	return j, res
}
