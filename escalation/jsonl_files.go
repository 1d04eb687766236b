package escalation

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// This file holds the JSONL sink's files as they lie on disk: the
// rotated files in order, reading their events back, and repairing a file
// whose last line a crash cut short.

// rotated is one rotated file, <path>.<n>.
type rotated struct {
	path string
	n    int
}

// rotatedFiles lists <path>.<n> files, oldest (smallest n) first.
func rotatedFiles(path string) ([]rotated, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("jsonl: list rotated files: %w", err)
	}
	var out []rotated
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || strconv.Itoa(n) != rest {
			continue
		}
		out = append(out, rotated{path: filepath.Join(dir, e.Name()), n: n})
	}
	slices.SortFunc(out, func(a, b rotated) int { return a.n - b.n })
	return out, nil
}

// AuditFiles lists an audit file's rotated files, oldest first, followed by
// the live file when it exists: reading them in order yields every record
// in the order written.
func AuditFiles(path string) ([]string, error) {
	rs, err := rotatedFiles(path)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rs)+1)
	for _, r := range rs {
		out = append(out, r.path)
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	return out, nil
}

// ReadAudit reads records from r, one CloudEvent per newline-terminated
// line. A final fragment without a newline is a torn write and is not
// returned; any other line that is not a CloudEvent is an error wrapping
// ErrCorruptAudit.
func ReadAudit(r io.Reader) ([]cloudevents.Event, error) {
	br := bufio.NewReader(r)
	var out []cloudevents.Event
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // len(line) > 0 here is a torn final line: never a record
		}
		if err != nil {
			return out, fmt.Errorf("jsonl: read: %w", err)
		}
		var ev cloudevents.Event
		if err := json.Unmarshal(bytes.TrimSuffix(line, []byte{'\n'}), &ev); err != nil {
			return out, fmt.Errorf("%w: line %d: %v", ErrCorruptAudit, lineNo, err)
		}
		out = append(out, ev)
	}
}

// ReadAuditFiles reads every record of an audit file and its rotated
// predecessors, oldest first.
func ReadAuditFiles(path string) ([]cloudevents.Event, error) {
	files, err := AuditFiles(path)
	if err != nil {
		return nil, err
	}
	var out []cloudevents.Event
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return out, fmt.Errorf("jsonl: %w", err)
		}
		evs, err := ReadAudit(f)
		_ = f.Close()
		out = append(out, evs...)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p, err)
		}
	}
	return out, nil
}

// RepairAuditFile cuts a torn tail off an audit file: a final fragment
// without a newline, then any final lines that are not valid JSON (a crash
// can leave zeroed or partial blocks). The bytes cut are appended to
// <path>.torn for inspection. It returns how many bytes were cut; a missing
// file is not an error.
func RepairAuditFile(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("jsonl repair: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("jsonl repair: %w", err)
	}
	size := st.Size()
	end := size
	if end > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, end-1); err != nil {
			return 0, fmt.Errorf("jsonl repair: %w", err)
		}
		if last[0] != '\n' {
			nl, err := lastNewline(f, end)
			if err != nil {
				return 0, err
			}
			end = nl + 1
		}
	}
	for end > 0 {
		nl, err := lastNewline(f, end-1)
		if err != nil {
			return 0, err
		}
		line := make([]byte, end-1-(nl+1))
		if _, err := f.ReadAt(line, nl+1); err != nil {
			return 0, fmt.Errorf("jsonl repair: %w", err)
		}
		if len(line) > 0 && json.Valid(line) {
			break
		}
		end = nl + 1
	}
	if end == size {
		return 0, nil
	}
	torn := make([]byte, size-end)
	if _, err := f.ReadAt(torn, end); err != nil {
		return 0, fmt.Errorf("jsonl repair: %w", err)
	}
	if err := appendAside(path+TornSuffix, torn); err != nil {
		return 0, err
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("jsonl repair: truncate: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("jsonl repair: sync: %w", err)
	}
	return size - end, nil
}

// lastNewline returns the offset of the last '\n' in [0, end), or -1.
func lastNewline(f *os.File, end int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end > 0 {
		start := max(end-chunk, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, fmt.Errorf("jsonl repair: %w", err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

func appendAside(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("jsonl repair: %w", err)
	}
	if !bytes.HasSuffix(b, []byte{'\n'}) {
		b = append(b, '\n')
	}
	_, err = f.Write(b)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonl repair: write %s: %w", path, err)
	}
	return nil
}
