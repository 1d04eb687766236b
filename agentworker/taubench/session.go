package taubench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/reinception/rein/internal/llm"
)

// Session is one conversation's database: a copy-on-write overlay over the
// Domain's shared base. A record is deep-copied into the overlay on its
// first write; untouched records are read from the base. A Session is not
// safe for concurrent use (a conversation runs one turn at a time).
type Session struct {
	d     *Domain
	over  [3]map[string]any // changed and new records, per table
	added [3][]string       // ids of new records, in insertion order
	// writes counts the records handed out for writing or stored (see
	// Writes).
	writes uint64
}

var _ Backend = (*Session)(nil)

// Domain returns the base the session runs on.
func (s *Session) Domain() *Domain { return s.d }

// Tools is the domain's tool list.
func (s *Session) Tools() []llm.Tool { return s.d.tools }

// Call runs one tool against this conversation's state. A failing tool
// returns a *ToolError (errors.Is(err, ErrTool)) whose text is the exact
// τ-bench observation.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	spec, ok := s.d.impls[name]
	if !ok {
		return "", &ToolError{Msg: "Unknown action " + name, unknown: true}
	}
	kwargs, err := parseArgs(args)
	if err != nil {
		return "", err
	}
	return spec.invoke(s, kwargs)
}

// get returns the current record (read-only).
func (s *Session) get(t int, id string) (any, bool) {
	if m := s.over[t]; m != nil {
		if v, ok := m[id]; ok {
			return v, true
		}
	}
	v, ok := s.d.tables[t].recs[id]
	return v, ok
}

// getObj returns the current record as an object (read-only).
func (s *Session) getObj(t int, id string) (*Object, bool) {
	v, ok := s.get(t, id)
	if !ok {
		return nil, false
	}
	o, ok := v.(*Object)
	return o, ok
}

// has reports whether a record exists.
func (s *Session) has(t int, id string) bool {
	_, ok := s.get(t, id)
	return ok
}

// mut returns a writable record, copying it into the overlay on first use.
func (s *Session) mut(t int, id string) (*Object, bool) {
	s.writes++ // the caller may change even a record already copied
	if m := s.over[t]; m != nil {
		if v, ok := m[id]; ok {
			o, ok := v.(*Object)
			return o, ok
		}
	}
	v, ok := s.d.tables[t].recs[id]
	if !ok {
		return nil, false
	}
	o, ok := DeepCopy(v).(*Object)
	if !ok {
		return nil, false
	}
	s.put(t, id, o)
	return o, true
}

// put stores a record (new ids are appended to the table's order).
func (s *Session) put(t int, id string, v any) {
	s.writes++
	if s.over[t] == nil {
		s.over[t] = make(map[string]any, 4)
	}
	if _, inOver := s.over[t][id]; !inOver {
		if _, inBase := s.d.tables[t].recs[id]; !inBase {
			s.added[t] = append(s.added[t], id)
		}
	}
	s.over[t][id] = v
}

// each visits the table's records in order (file order, then new records)
// until fn returns false.
func (s *Session) each(t int, fn func(id string, rec any) bool) {
	tb := s.d.tables[t]
	m := s.over[t]
	for _, id := range tb.keys {
		v := tb.recs[id]
		if m != nil {
			if w, ok := m[id]; ok {
				v = w
			}
		}
		if !fn(id, v) {
			return
		}
	}
	for _, id := range s.added[t] {
		if !fn(id, m[id]) {
			return
		}
	}
}

// Writes counts the records the session handed out for writing or
// stored since it was opened: a call across which it stays the same
// changed nothing (the count errs towards a change: a record taken for
// writing and left alone counts).
func (s *Session) Writes() uint64 { return s.writes }

// Record returns the session's current version of a record (read-only).
func (s *Session) Record(tableName, id string) (any, bool) {
	for i, t := range s.d.tables {
		if t.name == tableName {
			return s.get(i, id)
		}
	}
	return nil, false
}

// Changed returns the records that differ from the base, by table and id
// (new records included). Tables without changes are absent.
func (s *Session) Changed() map[string]map[string]any {
	out := map[string]map[string]any{}
	for i, t := range s.d.tables {
		for id, v := range s.over[i] {
			if base, ok := t.recs[id]; ok && Equal(base, v) {
				continue
			}
			if out[t.name] == nil {
				out[t.name] = map[string]any{}
			}
			out[t.name][id] = v
		}
	}
	return out
}

// Fingerprint is τ-bench's database hash of the session's current state
// (SPEC §8.1): SHA-256 of Python's str() of the canonical nested tuples.
// Untouched records reuse the base's pre-rendered text.
func (s *Session) Fingerprint() string {
	s.d.render()
	return s.fingerprint()
}

func (s *Session) fingerprint() string {
	d := s.d
	h := sha256.New()
	var scratch []byte
	h.Write([]byte{'('})
	for ti, t := range d.tables {
		if ti > 0 {
			h.Write([]byte(", "))
		}
		scratch = append(scratch[:0], '(')
		scratch = appendPyStrRepr(scratch, t.name)
		scratch = append(scratch, ", ("...)
		h.Write(scratch)
		over := s.over[ti]
		var added []string
		if len(s.added[ti]) > 0 {
			added = append(added, s.added[ti]...)
			sort.Strings(added)
		}
		n := 0 // records written
		runStart := -1
		flush := func(end int) { // write base pieces [runStart, end)
			if runStart < 0 {
				return
			}
			if n > 0 {
				h.Write([]byte(", "))
			}
			h.Write(t.canon[t.offs[runStart] : t.offs[end]-2])
			n += end - runStart
			runStart = -1
		}
		writeRec := func(id string, v any) {
			scratch = scratch[:0]
			if n > 0 {
				scratch = append(scratch, ", "...)
			}
			scratch = appendCanonPair(scratch, id, v)
			h.Write(scratch)
			n++
		}
		ai := 0
		for i, id := range t.sorted {
			for ai < len(added) && added[ai] < id {
				flush(i)
				writeRec(added[ai], over[added[ai]])
				ai++
			}
			if v, ok := over[id]; ok {
				flush(i)
				writeRec(id, v)
				continue
			}
			if runStart < 0 {
				runStart = i
			}
		}
		flush(len(t.sorted))
		for ; ai < len(added); ai++ {
			writeRec(added[ai], over[added[ai]])
		}
		if n == 1 {
			h.Write([]byte{','})
		}
		h.Write([]byte("))"))
	}
	if len(d.tables) == 1 {
		h.Write([]byte{','})
	}
	h.Write([]byte{')'})
	return hex.EncodeToString(h.Sum(nil))
}

// Marshal serialises the overlay (only the records this conversation
// changed or created) so that RestoreSession can continue it elsewhere.
// The bytes may be shared with other sessions: callers must not modify
// them.
func (s *Session) Marshal() ([]byte, error) {
	if s.pristine() {
		// Most turns only read: the state is the base's alone, encoded
		// once per domain (the slice is capped, so an append copies it).
		s.d.pristineOnce.Do(func() { s.d.pristine = s.d.NewSession().marshal() })
		return s.d.pristine[:len(s.d.pristine):len(s.d.pristine)], nil
	}
	return s.marshal(), nil
}

// pristine reports whether the session has written nothing.
func (s *Session) pristine() bool {
	for i := range s.over {
		if len(s.over[i]) > 0 {
			return false
		}
	}
	return true
}

func (s *Session) marshal() []byte {
	root := NewObject("domain", s.d.name, "base", s.d.digest)
	tables := &Object{}
	for i, t := range s.d.tables {
		if len(s.over[i]) == 0 {
			continue
		}
		ids := make([]string, 0, len(s.over[i]))
		for id := range s.over[i] {
			if _, inBase := t.recs[id]; inBase {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		ids = append(ids, s.added[i]...) // new records keep their order
		recs := make([]any, 0, len(ids))
		for _, id := range ids {
			_, inBase := t.recs[id]
			recs = append(recs, []any{id, s.over[i][id], !inBase})
		}
		tables.Set(t.name, recs)
	}
	root.Set("tables", tables)
	return appendJSON(nil, root)
}

// RestoreSession rebuilds a session from Marshal's bytes over the same base.
func RestoreSession(base *Domain, data []byte) (*Session, error) {
	v, err := ParseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("restore session: %w", err)
	}
	root, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("restore session: %w: not an object", ErrBadData)
	}
	name, _ := root.Get("domain")
	digest, _ := root.Get("base")
	if name != base.name || digest != base.digest {
		return nil, fmt.Errorf("restore session: %w: overlay for %v/%v, base %s/%s",
			ErrBaseMismatch, name, digest, base.name, base.digest)
	}
	s := base.NewSession()
	tv, _ := root.Get("tables")
	tables, ok := tv.(*Object)
	if !ok {
		return nil, fmt.Errorf("restore session: %w: no tables", ErrBadData)
	}
	for k, tn := range tables.Keys {
		ti := -1
		for i, t := range base.tables {
			if t.name == tn {
				ti = i
			}
		}
		recs, ok := tables.Vals[k].([]any)
		if ti < 0 || !ok {
			return nil, fmt.Errorf("restore session: %w: table %q", ErrBadData, tn)
		}
		for _, r := range recs {
			e, ok := r.([]any)
			if !ok || len(e) != 3 {
				return nil, fmt.Errorf("restore session: %w: record entry in %q", ErrBadData, tn)
			}
			id, ok1 := e[0].(string)
			isNew, ok2 := e[2].(bool)
			_, inBase := base.tables[ti].recs[id]
			if !ok1 || !ok2 || isNew == inBase {
				return nil, fmt.Errorf("restore session: %w: record %v in %q", ErrBadData, e[0], tn)
			}
			s.put(ti, id, e[1])
		}
	}
	return s, nil
}
