package schemas

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// appendPayload writes data as json.Marshal writes it, byte for byte, for
// the payloads most of a turn's outputs carry (Turn, Task, Step, Steps), without
// reflection; ok is false for anything else, and for a step whose
// arguments json.Marshal would rewrite, which json.Marshal then writes.
func appendPayload(b []byte, data any) ([]byte, bool) {
	if n := payloadSize(data); n > 0 && b == nil {
		b = make([]byte, 0, n)
	}
	switch p := data.(type) {
	case Turn:
		return p.appendJSON(b), true
	case *Turn:
		if p != nil {
			return p.appendJSON(b), true
		}
	case Task:
		return p.appendJSON(b), true
	case *Task:
		if p != nil {
			return p.appendJSON(b), true
		}
	case Step:
		return p.appendJSON(b)
	case *Step:
		if p != nil {
			return p.appendJSON(b)
		}
	case Steps:
		return p.appendJSON(b)
	case *Steps:
		if p != nil {
			return p.appendJSON(b)
		}
	}
	return b, false
}

// payloadSize is about how long appendPayload's output is (0: it does not
// write data): the strings, the names and room for numbers and a few
// escapes, so that it is written into one allocation.
func payloadSize(data any) int {
	switch p := data.(type) {
	case Turn:
		return 48 + len(p.Role) + len(p.Text)
	case *Turn:
		if p != nil {
			return 48 + len(p.Role) + len(p.Text)
		}
	case Task:
		return p.size()
	case *Task:
		if p != nil {
			return p.size()
		}
	case Step:
		return p.size()
	case *Step:
		if p != nil {
			return p.size()
		}
	case Steps:
		return p.size()
	case *Steps:
		if p != nil {
			return p.size()
		}
	}
	return 0
}

func (s *Steps) size() int {
	n := 32
	for i := range s.Steps {
		n += s.Steps[i].size()
	}
	return n
}

func (s *Step) size() int {
	// A tool's output is often JSON itself: its quotes, escaped, would
	// otherwise outgrow the buffer and copy it into one twice the size.
	return 112 + len(s.Kind) + len(s.Name) + len(s.CallID) + len(s.Arguments) + len(s.Output) + jsonEscapes(s.Output)
}

func (t *Task) size() int {
	n := 80 + len(t.UserText) + len(t.DetectionID)
	if t.Inception != nil {
		n += 64 + len(t.Inception.Thought) + len(t.Inception.ErrorType) + len(t.Inception.RecoveryTool)
	}
	return n
}

func (t *Turn) appendJSON(b []byte) []byte {
	b = append(b, `{"role":`...)
	b = AppendJSONString(b, t.Role)
	b = append(b, `,"text":`...)
	b = AppendJSONString(b, t.Text)
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, int64(t.Turn), 10)
	return append(b, '}')
}

func (t *Task) appendJSON(b []byte) []byte {
	b = append(b, `{"turn":`...)
	b = strconv.AppendInt(b, int64(t.Turn), 10)
	b = append(b, `,"user_text":`...)
	b = AppendJSONString(b, t.UserText)
	if t.DetectionID != "" {
		b = append(b, `,"detection_id":`...)
		b = AppendJSONString(b, t.DetectionID)
	}
	b = append(b, `,"inception":`...)
	if in := t.Inception; in == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"thought":`...)
		b = AppendJSONString(b, in.Thought)
		b = append(b, `,"error_type":`...)
		b = AppendJSONString(b, in.ErrorType)
		b = append(b, `,"recovery_tool":`...)
		b = AppendJSONString(b, in.RecoveryTool)
		b = append(b, '}')
	}
	return append(b, '}')
}

func (s *Step) appendJSON(b []byte) ([]byte, bool) {
	if len(s.Arguments) > 0 && !plainJSON(s.Arguments) {
		return b, false
	}
	b = append(b, `{"turn":`...)
	b = strconv.AppendInt(b, int64(s.Turn), 10)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(s.Step), 10)
	b = append(b, `,"kind":`...)
	b = AppendJSONString(b, s.Kind)
	if s.Name != "" {
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, s.Name)
	}
	if s.CallID != "" {
		b = append(b, `,"call_id":`...)
		b = AppendJSONString(b, s.CallID)
	}
	if len(s.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, s.Arguments...)
	}
	if s.Output != "" {
		b = append(b, `,"output":`...)
		b = AppendJSONString(b, s.Output)
	}
	b = append(b, `,"injected":`...)
	b = strconv.AppendBool(b, s.Injected)
	return append(b, '}'), true
}

// appendJSON declines the whole payload when a step declines.
func (s *Steps) appendJSON(b []byte) ([]byte, bool) {
	start := len(b)
	b = append(b, `{"turn":`...)
	b = strconv.AppendInt(b, int64(s.Turn), 10)
	b = append(b, `,"steps":`...)
	if s.Steps == nil {
		return append(b, "null}"...), true
	}
	b = append(b, '[')
	for i := range s.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = s.Steps[i].appendJSON(b); !ok {
			return b[:start], false
		}
	}
	return append(b, "]}"...), true
}

// plainJSON tells whether json.Marshal keeps raw JSON as it is: valid,
// with no space to compact away and nothing it escapes (<, >, &, U+2028,
// U+2029; the last two start with the byte 0xE2, so that byte is
// refused).
func plainJSON(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return json.Valid(raw)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString writes s as a JSON string the way encoding/json does:
// quote, backslash and control characters escaped (\b \f \n \r \t by
// name, the rest as \u00XX), <, > and & as \u003c, \u003e, \u0026, U+2028
// and U+2029 escaped, and each byte of invalid UTF-8 as \ufffd.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for len(s) > 0 {
		n := 0
		for n < len(s) && s[n] >= 0x20 && s[n] < utf8.RuneSelf && s[n] != '"' && s[n] != '\\' && s[n] != '<' && s[n] != '>' && s[n] != '&' {
			n++
		}
		b = append(b, s[:n]...)
		if s = s[n:]; len(s) == 0 {
			break
		}
		if c := s[0]; c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			s = s[1:]
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			b = append(b, s[:size]...)
		}
		s = s[size:]
	}
	return append(b, '"')
}

// jsonEscapes is how many bytes AppendJSONString adds to s besides its
// quotes: exact for ASCII; U+2028 and U+2029 counted at their first byte
// (0xE2, so other characters starting with it count too); invalid UTF-8
// not counted. It sizes buffers only: a wrong count costs a regrowth.
func jsonEscapes(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		case c == 0xE2:
			n += 3
		}
	}
	return n
}

// UnmarshalPayload is json.Unmarshal(data, out). For a *Turn or *Task in
// data of the plain shape stages write (the fields' own names, strings
// without escapes, integers without sign, fraction or exponent) it reads
// the fields directly, as json.Unmarshal would set them; anything else
// goes to json.Unmarshal, which also says what is wrong.
func UnmarshalPayload(data []byte, out any) error {
	var ok bool
	switch p := out.(type) {
	case *Turn:
		ok = p != nil && readTurn(data, p)
	case *Task:
		ok = p != nil && readTask(data, p)
	}
	if ok {
		return nil
	}
	return json.Unmarshal(data, out)
}

// readTurn reads data into t as json.Unmarshal would, or is false, having
// set nothing.
func readTurn(data []byte, t *Turn) bool {
	v := *t
	r := plainReader{data: data}
	ok := r.object(func(key []byte) bool {
		switch string(key) {
		case "role":
			return r.str(&v.Role)
		case "text":
			return r.str(&v.Text)
		case "turn":
			return r.integer(&v.Turn)
		}
		return false
	}) && r.end()
	if ok {
		*t = v
	}
	return ok
}

// readTask reads data into t as json.Unmarshal would, or is false, having
// set nothing. An inception object is read into the Inception t points to,
// as json.Unmarshal does, or a new one; data naming inception twice is
// left to json.Unmarshal.
func readTask(data []byte, t *Task) bool {
	v := *t
	var in *Inception
	seen := false
	r := plainReader{data: data}
	ok := r.object(func(key []byte) bool {
		switch string(key) {
		case "turn":
			return r.integer(&v.Turn)
		case "user_text":
			return r.str(&v.UserText)
		case "detection_id":
			return r.str(&v.DetectionID)
		case "inception":
			if seen {
				return false
			}
			seen = true
			if r.null() {
				return true
			}
			in = &Inception{}
			if t.Inception != nil {
				*in = *t.Inception
			}
			return r.object(func(key []byte) bool {
				switch string(key) {
				case "thought":
					return r.str(&in.Thought)
				case "error_type":
					return r.str(&in.ErrorType)
				case "recovery_tool":
					return r.str(&in.RecoveryTool)
				}
				return false
			})
		}
		return false
	}) && r.end()
	if !ok {
		return false
	}
	switch {
	case in != nil && t.Inception != nil:
		*t.Inception = *in
		v.Inception = t.Inception
	case in != nil:
		v.Inception = in
	case seen:
		v.Inception = nil
	}
	*t = v
	return true
}

// plainReader reads JSON of the plain shape UnmarshalPayload takes; each
// method is false for anything else.
type plainReader struct {
	data []byte
	i    int
}

func (r *plainReader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *plainReader) byte(c byte) bool {
	r.space()
	if r.i < len(r.data) && r.data[r.i] == c {
		r.i++
		return true
	}
	return false
}

// end is true when nothing but space is left.
func (r *plainReader) end() bool {
	r.space()
	return r.i == len(r.data)
}

// object reads {"key": value, ...}, each value read by field.
func (r *plainReader) object(field func(key []byte) bool) bool {
	if !r.byte('{') {
		return false
	}
	if r.byte('}') {
		return true
	}
	for {
		key, ok := r.raw()
		if !ok || !r.byte(':') || !field(key) {
			return false
		}
		if r.byte('}') {
			return true
		}
		if !r.byte(',') {
			return false
		}
	}
}

// str reads a string without escapes, of valid UTF-8 and no control
// characters: json.Unmarshal takes such a string's bytes as they are.
func (r *plainReader) str(out *string) bool {
	s, ok := r.raw()
	if ok {
		*out = string(s)
	}
	return ok
}

// raw is str's bytes, in data.
func (r *plainReader) raw() ([]byte, bool) {
	if !r.byte('"') {
		return nil, false
	}
	start := r.i
	for r.i < len(r.data) {
		c := r.data[r.i]
		switch {
		case c == '"':
			s := r.data[start:r.i]
			r.i++
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		r.i++
	}
	return nil, false
}

// integer reads digits alone (no sign, fraction or exponent), without a
// leading zero, up to MaxTurn.
func (r *plainReader) integer(out *int) bool {
	r.space()
	start := r.i
	n := 0
	for r.i < len(r.data) && r.data[r.i] >= '0' && r.data[r.i] <= '9' {
		n = n*10 + int(r.data[r.i]-'0')
		r.i++
		if n > MaxTurn {
			return false
		}
	}
	digits := r.i - start
	if digits == 0 || (digits > 1 && r.data[start] == '0') {
		return false
	}
	if r.i < len(r.data) {
		switch r.data[r.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	*out = n
	return true
}

// null reads the literal null.
func (r *plainReader) null() bool {
	r.space()
	if len(r.data)-r.i >= 4 && string(r.data[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}
