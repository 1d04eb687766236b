package escalation

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// JSONL defaults.
const (
	DefaultJSONLMaxBytes     = 128 << 20
	DefaultJSONLSyncInterval = 200 * time.Millisecond
)

// TornSuffix names the file next to an audit file that receives the bytes of
// a torn or invalid final line cut off when the audit file is reopened.
const TornSuffix = ".torn"

// JSONLConfig configures one jsonl audit sink; in rein.yaml it is a
// `type: jsonl` entry of `sinks:` with the keys tagged below.
type JSONLConfig struct {
	// Name is the instance name (default "jsonl"; see SinksConfig.SinkNames).
	Name         string        `yaml:"name"`
	Path         string        `yaml:"path"`          // required; no two jsonl sinks share one
	MaxBytes     int64         `yaml:"max_bytes"`     // rotate before the file would exceed this (default 128 MiB)
	SyncInterval time.Duration `yaml:"sync_interval"` // flush and fsync buffered lines this often (default 200ms)
}

func (c *JSONLConfig) withDefaults() {
	if c.Name == "" {
		c.Name = KindJSONL
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultJSONLMaxBytes
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultJSONLSyncInterval
	}
}

func (c *JSONLConfig) validate() error {
	if c.Path == "" {
		return fmt.Errorf("%w: jsonl sink: path is required", ErrInvalidConfig)
	}
	if c.MaxBytes < 0 || c.SyncInterval < 0 {
		return fmt.Errorf("%w: jsonl sink: max_bytes %d and sync_interval %s must not be negative", ErrInvalidConfig, c.MaxBytes, c.SyncInterval)
	}
	return nil
}

// JSONL appends one structured-mode CloudEvent JSON per line to an audit
// file. Deliver buffers; the buffer is written and fsynced every
// SyncInterval, on Flush and on Close. Before a line would push the file
// past MaxBytes the file is renamed to <path>.<n> (n = 1, 2, … oldest first)
// and a fresh one started; rotated files are never deleted. On open, a torn
// final line (no newline, or not valid JSON, as a crash may leave) is cut
// off and appended to <path>.torn, so it is never read as a record.
type JSONL struct {
	cfg JSONLConfig
	m   *Metrics
	log *slog.Logger

	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	size   int64 // bytes in the file, buffered ones included
	dirty  bool
	closed bool

	stop chan struct{}
	done chan struct{}
}

// NewJSONL opens (creating or repairing) the audit file and starts its
// periodic sync. m and log may be nil.
func NewJSONL(cfg JSONLConfig, m *Metrics, log *slog.Logger) (*JSONL, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o750); err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	cut, err := RepairAuditFile(cfg.Path)
	if err != nil {
		return nil, err
	}
	if cut > 0 {
		log.Warn("jsonl audit file had a torn final line; moved aside",
			slog.String("path", cfg.Path), slog.Int64("bytes", cut), slog.String("to", cfg.Path+TornSuffix))
	}
	s := &JSONL{cfg: cfg, m: m, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.open(); err != nil {
		return nil, err
	}
	go s.syncLoop()
	return s, nil
}

func (s *JSONL) open() error {
	f, err := os.OpenFile(s.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("jsonl: %w", err)
	}
	s.f, s.size = f, st.Size()
	s.w = bufio.NewWriterSize(f, 64<<10)
	return syncDir(filepath.Dir(s.cfg.Path))
}

// Name is the instance name (JSONLConfig.Name, default "jsonl").
func (s *JSONL) Name() string { return s.cfg.Name }

// Kind is KindJSONL.
func (s *JSONL) Kind() string { return KindJSONL }

// Path is the audit file being written.
func (s *JSONL) Path() string { return s.cfg.Path }

// Deliver appends ev as one line. It is durable after the next Flush (or
// sync tick, or Close).
func (s *JSONL) Deliver(_ context.Context, ev cloudevents.Event) error {
	start := time.Now()
	defer func() { s.m.observe(s.Name(), KindJSONL, time.Since(start)) }()
	line, err := json.Marshal(ev)
	if err != nil {
		s.m.delivery(s.Name(), KindJSONL, OutcomeFailed)
		return fmt.Errorf("%w: jsonl: encode event %q: %w", ErrDeliveryFailed, ev.ID(), err)
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("jsonl: %w", ErrClosed)
	}
	if s.size > 0 && s.size+int64(len(line)) > s.cfg.MaxBytes {
		if err := s.rotate(); err != nil {
			return err
		}
	}
	n, err := s.w.Write(line)
	s.size += int64(n)
	s.dirty = true
	if err != nil {
		return fmt.Errorf("jsonl: write: %w", err)
	}
	s.m.delivery(s.Name(), KindJSONL, OutcomeDelivered)
	return nil
}

// Flush writes buffered lines and fsyncs the file.
func (s *JSONL) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.flushLocked()
}

func (s *JSONL) flushLocked() error {
	if !s.dirty {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("jsonl: flush: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("jsonl: sync: %w", err)
	}
	s.dirty = false
	return nil
}

// rotate closes the current file, renames it to the next free <path>.<n>
// and opens a fresh one.
func (s *JSONL) rotate() error {
	if err := s.flushLocked(); err != nil {
		return err
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("jsonl: close for rotation: %w", err)
	}
	rotated, err := rotatedFiles(s.cfg.Path)
	if err != nil {
		return err
	}
	next := 1
	if len(rotated) > 0 {
		next = rotated[len(rotated)-1].n + 1
	}
	to := fmt.Sprintf("%s.%d", s.cfg.Path, next)
	if err := os.Rename(s.cfg.Path, to); err != nil {
		return fmt.Errorf("jsonl: rotate: %w", err)
	}
	s.log.Info("jsonl audit file rotated", slog.String("path", s.cfg.Path), slog.String("to", to))
	return s.open()
}

func (s *JSONL) syncLoop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.Flush(); err != nil {
				s.log.Error("jsonl periodic sync failed", slog.String("path", s.cfg.Path), slog.Any("err", err))
			}
		}
	}
}

// Close stops the periodic sync, flushes, fsyncs and closes the file.
func (s *JSONL) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.flushLocked()
	if cerr := s.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("jsonl: close: %w", cerr)
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("jsonl: open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("jsonl: sync dir: %w", err)
	}
	return nil
}
