package taubench

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"sync"

	"github.com/reinception/rein/internal/llm"
)

// Domain names.
const (
	Airline = "airline"
	Retail  = "retail"
)

// Domain is one τ-bench domain loaded from a data directory: the pristine
// database, shared read-only by every conversation, plus the tool set.
// It is safe for concurrent use; conversations get their own Session.
type Domain struct {
	name   string
	tables []*table // sorted by name
	tools  []llm.Tool
	impls  map[string]*toolSpec
	digest string // sha256 over the raw data files: identifies the base

	renderOnce sync.Once
	baseHash   string

	indexOnce sync.Once
	byOrigin  map[string][]*Object // airline: base flights by origin, file order

	pristineOnce sync.Once
	pristine     []byte // Session.Marshal of a session that wrote nothing
}

// flightsFrom returns the base flights departing from origin, in file
// order. Tools never write flights, so sessions without flight overlays
// can search through this index instead of scanning the table.
func (d *Domain) flightsFrom(origin string) []*Object {
	d.indexOnce.Do(func() {
		d.byOrigin = map[string][]*Object{}
		t := d.tables[tFlights]
		for _, id := range t.keys {
			f, ok := t.recs[id].(*Object)
			if !ok {
				continue
			}
			if o, ok := f.Get("origin"); ok {
				if os, ok := o.(string); ok {
					d.byOrigin[os] = append(d.byOrigin[os], f)
				}
			}
		}
	})
	return d.byOrigin[origin]
}

// table is one pristine table: records by id, ids in file order and, once
// rendered, each record's fingerprint text in sorted id order.
type table struct {
	name   string
	keys   []string
	recs   map[string]any
	sorted []string

	rawLen int    // size of the file, to size canon
	canon  []byte // "(id, rec)" pieces joined by ", ", in sorted id order
	offs   []int  // offs[i] = start of piece i in canon; offs[n] = len(canon)+2
}

// tableNames lists each domain's tables in sorted order (which is also the
// fingerprint order).
var tableNames = map[string][]string{
	Airline: {"flights", "reservations", "users"},
	Retail:  {"orders", "products", "users"},
}

// Table indices, fixed per domain by tableNames.
const (
	tFlights      = 0
	tReservations = 1
	tOrders       = 0
	tProducts     = 1
	tUsers        = 2
)

// Load reads a τ-bench data directory for the named domain ("airline":
// flights.json, reservations.json, users.json; "retail": orders.json,
// products.json, users.json). A tools.json beside the data, if present,
// overrides the tool descriptions. Files with the same content as an
// earlier Load's share its Domain (see loaded).
func Load(name, dir string) (*Domain, error) {
	f, err := readDomain(name, os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	key := f.key()
	loaded.Lock()
	defer loaded.Unlock()
	if d, ok := loaded.m[key]; ok {
		return d, nil
	}
	d, err := f.parse()
	if err != nil {
		return nil, err
	}
	if len(loaded.m) >= maxLoaded {
		clear(loaded.m)
	}
	loaded.m[key] = d
	return d, nil
}

// loaded holds the domains Load parsed, by content: an eval run starts a
// pipeline per condition and domain, and each would otherwise parse the
// same megabytes again. A Domain is read-only, so sharing it is safe; a
// file that changes gives another key and is parsed anew.
var loaded = struct {
	sync.Mutex
	m map[string]*Domain
}{m: map[string]*Domain{}}

// maxLoaded bounds loaded: a process uses one or two data directories.
const maxLoaded = 4

// LoadFS is Load over a file system rooted at the data directory; it
// parses every time.
func LoadFS(name string, fsys fs.FS) (*Domain, error) {
	f, err := readDomain(name, fsys)
	if err != nil {
		return nil, err
	}
	return f.parse()
}

// domainFiles is a domain's data as read, before parsing.
type domainFiles struct {
	name   string
	tables [][]byte // in tableNames order
	tools  []byte   // tools.json, nil when absent
	digest string
}

func readDomain(name string, fsys fs.FS) (*domainFiles, error) {
	names, ok := tableNames[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDomain, name)
	}
	f := &domainFiles{name: name}
	h := sha256.New()
	for _, tn := range names {
		raw, err := fs.ReadFile(fsys, tn+".json")
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		h.Write([]byte(tn))
		h.Write(raw)
		f.tables = append(f.tables, raw)
	}
	f.digest = hex.EncodeToString(h.Sum(nil))
	raw, err := fs.ReadFile(fsys, "tools.json")
	switch {
	case err == nil:
		f.tools = raw
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("load %s/tools.json: %w", name, err)
	}
	return f, nil
}

// key identifies the files' content: the domain, the tables' digest and
// the tool overrides.
func (f *domainFiles) key() string {
	tools := sha256.Sum256(f.tools)
	return f.name + "/" + f.digest + "/" + strconv.FormatBool(f.tools != nil) + hex.EncodeToString(tools[:])
}

func (f *domainFiles) parse() (*Domain, error) {
	d := &Domain{name: f.name, digest: f.digest}
	for i, tn := range tableNames[f.name] {
		t, err := parseTable(tn, f.tables[i])
		if err != nil {
			return nil, fmt.Errorf("load %s/%s.json: %w", f.name, tn, err)
		}
		d.tables = append(d.tables, t)
	}
	tools, impls, err := toolSet(f.name)
	if err != nil {
		return nil, err
	}
	d.tools, d.impls = tools, impls
	if f.tools != nil {
		if d.tools, err = overrideTools(d.tools, f.tools); err != nil {
			return nil, fmt.Errorf("load %s/tools.json: %w", f.name, err)
		}
	}
	return d, nil
}

func parseTable(name string, raw []byte) (*table, error) {
	v, err := ParseJSON(raw)
	if err != nil {
		return nil, err
	}
	o, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("%w: table %s is not a JSON object", ErrBadData, name)
	}
	t := &table{name: name, keys: o.Keys, recs: make(map[string]any, len(o.Keys)), rawLen: len(raw)}
	for i, k := range o.Keys {
		t.recs[k] = o.Vals[i]
	}
	t.sorted = append([]string(nil), o.Keys...)
	sort.Strings(t.sorted)
	return t, nil
}

// Name is "airline" or "retail".
func (d *Domain) Name() string { return d.name }

// Digest identifies the base data (SHA-256 over the raw table files).
func (d *Domain) Digest() string { return d.digest }

// Tools is the domain's OpenAI-style tool list, in τ-bench's order.
func (d *Domain) Tools() []llm.Tool { return d.tools }

// Terminal reports whether calling the named tool ends the conversation
// (τ-bench: transfer_to_human_agents).
func Terminal(name string) bool { return name == "transfer_to_human_agents" }

// NewSession opens a conversation's state: an empty copy-on-write overlay
// over the shared base. It costs a few hundred bytes until the first write.
func (d *Domain) NewSession() *Session { return &Session{d: d} }

// Record returns a pristine base record (read-only: callers must not modify it).
func (d *Domain) Record(tableName, id string) (any, bool) {
	for _, t := range d.tables {
		if t.name == tableName {
			v, ok := t.recs[id]
			return v, ok
		}
	}
	return nil, false
}

// TableNames lists the domain's tables in sorted order.
func (d *Domain) TableNames() []string { return tableNames[d.name] }

// BaseFingerprint is the fingerprint of the untouched database.
func (d *Domain) BaseFingerprint() string {
	d.render()
	return d.baseHash
}

// render prepares each table's fingerprint text once.
func (d *Domain) render() {
	d.renderOnce.Do(func() {
		for _, t := range d.tables {
			t.offs = make([]int, len(t.sorted)+1)
			t.canon = make([]byte, 0, t.rawLen+t.rawLen/4)
			for i, id := range t.sorted {
				if i > 0 {
					t.canon = append(t.canon, ", "...)
				}
				t.offs[i] = len(t.canon)
				t.canon = appendCanonPair(t.canon, id, t.recs[id])
			}
			t.offs[len(t.sorted)] = len(t.canon) + 2
		}
		d.baseHash = d.NewSession().fingerprint()
	})
}
