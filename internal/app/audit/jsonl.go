package audit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// contextAttrs are the CloudEvents context attributes in the order
// AppendStructured writes them after specversion; every other ce- header
// is an extension.
var contextAttrs = [...]string{"id", "source", "type", "subject", "time", "dataschema", "datacontenttype"}

const (
	attrID = iota
	attrSource
	attrType
	attrSubject
	attrTime
	attrDataSchema
	attrContentType
	nAttrs
)

type extAttr struct{ name, value string }

// AppendStructured appends r as one CloudEvents structured-mode JSON object
// (no newline) and reports whether r was an event at all. It reads the
// binary-mode headers directly, in one pass, with no sdk-go decode per
// event: attribute and extension values are strings, as sdk-go yields them
// after reading a binary-mode message, and JSON data is embedded as is,
// other data as data_base64. A message already in structured mode is
// copied. A message that is neither is reported as not an event.
func AppendStructured(dst []byte, r *Record) ([]byte, bool) {
	var attrs [nAttrs]string
	var spec, plainCT string
	var extBuf [8]extAttr
	ext := extBuf[:0]
	for k, v := range r.Header {
		if len(v) == 0 {
			continue
		}
		if len(k) <= len(bus.HeaderCEPrefix) || !strings.EqualFold(k[:len(bus.HeaderCEPrefix)], bus.HeaderCEPrefix) {
			if strings.EqualFold(k, bus.HeaderContentType) {
				plainCT = v[0]
			}
			continue
		}
		name := k[len(bus.HeaderCEPrefix):]
		if hasUpper(name) {
			name = strings.ToLower(name)
		}
		if name == "specversion" {
			spec = v[0]
			continue
		}
		known := false
		for i, a := range contextAttrs {
			if a == name {
				attrs[i], known = v[0], true
				break
			}
		}
		if !known {
			ext = append(ext, extAttr{name, v[0]})
		}
	}
	if plainCT != "" {
		attrs[attrContentType] = plainCT
	}
	if attrs[attrTime] == "" && !r.Stored.IsZero() {
		// An event posted without a time gets the store time, as
		// everywhere rein shows one (Record.Time).
		attrs[attrTime] = r.Time().UTC().Format(time.RFC3339Nano)
	}
	ct := attrs[attrContentType]
	if spec == "" {
		if strings.HasPrefix(ct, "application/cloudevents+json") && json.Valid(r.Data) {
			return appendCompact(dst, r.Data), true
		}
		return dst, false
	}
	dst = append(dst, `{"specversion":`...)
	dst = schemas.AppendJSONString(dst, spec)
	for i, v := range attrs {
		if v != "" {
			dst = append(dst, ',', '"')
			dst = append(dst, contextAttrs[i]...)
			dst = append(dst, '"', ':')
			dst = schemas.AppendJSONString(dst, v)
		}
	}
	slices.SortFunc(ext, func(a, b extAttr) int { return strings.Compare(a.name, b.name) })
	for _, e := range ext {
		dst = append(dst, ',')
		dst = schemas.AppendJSONString(dst, e.name)
		dst = append(dst, ':')
		dst = schemas.AppendJSONString(dst, e.value)
	}
	if len(r.Data) > 0 {
		if isJSONType(ct) && json.Valid(r.Data) {
			dst = append(dst, `,"data":`...)
			dst = appendCompact(dst, r.Data)
		} else {
			dst = append(dst, `,"data_base64":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, r.Data)
			dst = append(dst, '"')
		}
	}
	return append(dst, '}'), true
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func isJSONType(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	ct = strings.TrimSpace(strings.ToLower(ct))
	return ct == "" || ct == "application/json" || ct == "text/json" || strings.HasSuffix(ct, "+json")
}

// appendCompact appends valid JSON on one line: raw line breaks in valid
// JSON can only be insignificant whitespace, so input without any (the
// usual case) is copied as is and the rest is compacted.
func appendCompact(dst, js []byte) []byte {
	if !bytes.ContainsAny(js, "\r\n") {
		return append(dst, js...)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, js); err != nil {
		return append(dst, js...)
	}
	return append(dst, b.Bytes()...)
}

// JSONLWriter writes records as CloudEvents structured JSON, one per line,
// through a buffer. Close (or Flush) before reading the output.
type JSONLWriter struct {
	w       *bufio.Writer
	buf     []byte
	Written uint64 // events written
	Skipped uint64 // messages that were not CloudEvents
}

// NewJSONLWriter buffers writes to w.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	return &JSONLWriter{w: bufio.NewWriterSize(w, 256<<10), buf: make([]byte, 0, 4096)}
}

// Write writes one record (a non-event is counted in Skipped).
func (j *JSONLWriter) Write(r *Record) error {
	b, ok := AppendStructured(j.buf[:0], r)
	if !ok {
		j.Skipped++
		return nil
	}
	b = append(b, '\n')
	j.buf = b
	j.Written++
	_, err := j.w.Write(b)
	return err
}

// Flush writes out the buffer.
func (j *JSONLWriter) Flush() error { return j.w.Flush() }
