package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// JetStream API subjects of the snapshot protocol (nats-server
// jetstream_api.go). The nats.go jetstream package has no helper for them.
const (
	apiSnapshot = "$JS.API.STREAM.SNAPSHOT."
	apiRestore  = "$JS.API.STREAM.RESTORE."
)

// Files of one stream in a backup directory.
const (
	snapshotExt = ".snapshot" // the server's s2-compressed archive, byte for byte
	metaExt     = ".json"     // BackupMeta
)

// snapshotChunk is the chunk size asked of the server (it clamps to 1 KiB..1 MiB).
const snapshotChunk = 128 << 10

// snapshotWindow bounds the bytes the server sends ahead of our acks: 64
// chunks and the end marker fit a rein connection's synchronous queue
// (streams.SyncQueueLen), so none is dropped while a chunk is written.
const snapshotWindow = 64 * snapshotChunk

// The window's chunks and the end marker must fit the queue.
var _ [streams.SyncQueueLen - snapshotWindow/snapshotChunk - 1]struct{}

// BackupMeta is written beside each snapshot: the stream configuration and
// state as the server reported them when the snapshot began. Restore sends
// both back unchanged.
type BackupMeta struct {
	Stream  string          `json:"stream"`
	Taken   time.Time       `json:"taken"`
	Bytes   int64           `json:"snapshot_bytes"`
	Config  json.RawMessage `json:"config"`
	State   json.RawMessage `json:"state"`
	Version int             `json:"version"`
}

// apiError is the error member of every JetStream API response.
type apiError struct {
	Code        int    `json:"code"`
	ErrCode     int    `json:"err_code"`
	Description string `json:"description"`
}

func (e *apiError) err(op string) error {
	if e == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: %s (code %d, err_code %d)", ErrBackup, op, e.Description, e.Code, e.ErrCode)
}

// BackupStreams returns rein's streams plus the conversations KV bucket's
// stream, the set `rein streams backup` saves by default.
func BackupStreams() []string {
	return append(slices.Clone(natsserver.StreamNames), bus.StreamConversations)
}

// Backup snapshots each named stream into dir (created if needed) as
// <stream>.snapshot and <stream>.json, using the server's snapshot API with
// flow-controlled chunks acknowledged one by one. Streams that do not exist
// are skipped and not returned. Consumers are included in the snapshot.
func Backup(ctx context.Context, nc *nats.Conn, dir string, names []string) ([]BackupMeta, error) {
	// Snapshots hold customers' conversations: private to this user.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	var out []BackupMeta
	for _, name := range names {
		m, err := backupOne(ctx, nc, dir, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

func backupOne(ctx context.Context, nc *nats.Conn, dir, name string) (BackupMeta, error) {
	meta := BackupMeta{Stream: name, Taken: time.Now().UTC(), Version: 1}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return meta, fmt.Errorf("%w: %s: %w", ErrBackup, name, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "chunk_size": snapshotChunk, "window_size": snapshotWindow})
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := nc.RequestWithContext(rctx, apiSnapshot+name, req)
	cancel()
	if err != nil {
		return meta, fmt.Errorf("%w: snapshot %s: %w", ErrBackup, name, err)
	}
	var sr struct {
		Error  *apiError       `json:"error"`
		Config json.RawMessage `json:"config"`
		State  json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(resp.Data, &sr); err != nil {
		return meta, fmt.Errorf("%w: snapshot %s: %w", ErrBackup, name, err)
	}
	if sr.Error != nil {
		if sr.Error.ErrCode == 10059 { // JSStreamNotFoundErr
			return meta, jetstream.ErrStreamNotFound
		}
		return meta, sr.Error.err("snapshot " + name)
	}
	meta.Config, meta.State = sr.Config, sr.State
	tmp := filepath.Join(dir, name+snapshotExt+".tmp")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return meta, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	defer os.Remove(tmp)
	n, err := receiveChunks(ctx, nc, sub, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return meta, fmt.Errorf("%w: snapshot %s: %w", ErrBackup, name, err)
	}
	meta.Bytes = n
	if err := os.Rename(tmp, filepath.Join(dir, name+snapshotExt)); err != nil {
		return meta, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	mb, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name+metaExt), append(mb, '\n'), 0o600); err != nil {
		return meta, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	return meta, nil
}

// receiveChunks writes snapshot chunks to w, acknowledging each one that
// asks for it, until the server's empty end-of-snapshot message (status
// 204 on success, an error status otherwise).
func receiveChunks(ctx context.Context, nc *nats.Conn, sub *nats.Subscription, w io.Writer) (int64, error) {
	var total int64
	for {
		mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			return total, fmt.Errorf("waiting for a chunk after %d bytes: %w", total, err)
		}
		if len(m.Data) == 0 {
			status := m.Header.Get(streams.StatusHeader)
			if status == "" || status == "204" {
				return total, nil
			}
			return total, fmt.Errorf("server ended the snapshot with status %s %s", status, m.Header.Get(streams.DescriptionHeader))
		}
		if _, err := w.Write(m.Data); err != nil {
			return total, err
		}
		total += int64(len(m.Data))
		if m.Reply != "" {
			if err := nc.Publish(m.Reply, nil); err != nil {
				return total, err
			}
		}
	}
}

// Restore recreates each stream saved in dir from its snapshot. A stream
// that already exists is refused unless replace is set, in which case it
// is deleted first. names selects streams (empty: every snapshot in dir).
func Restore(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, dir string, names []string, replace bool) ([]BackupMeta, error) {
	if len(names) == 0 {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBackup, err)
		}
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), snapshotExt); ok && !e.IsDir() {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: no *%s files in %s", ErrBackup, snapshotExt, dir)
		}
	}
	var out []BackupMeta
	for _, name := range names {
		m, err := restoreOne(ctx, nc, js, dir, name, replace)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

func restoreOne(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, dir, name string, replace bool) (BackupMeta, error) {
	var meta BackupMeta
	mb, err := os.ReadFile(filepath.Join(dir, name+metaExt))
	if err != nil {
		return meta, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	if err := json.Unmarshal(mb, &meta); err != nil {
		return meta, fmt.Errorf("%w: %s: %w", ErrBackup, name+metaExt, err)
	}
	if meta.Stream != name {
		return meta, fmt.Errorf("%w: %s describes stream %q", ErrBackup, name+metaExt, meta.Stream)
	}
	f, err := os.Open(filepath.Join(dir, name+snapshotExt))
	if err != nil {
		return meta, fmt.Errorf("%w: %w", ErrBackup, err)
	}
	defer f.Close()
	if _, err := js.Stream(ctx, name); err == nil {
		if !replace {
			return meta, fmt.Errorf("%w: stream %s exists; restore with --replace to delete it first", ErrBackup, name)
		}
		if err := js.DeleteStream(ctx, name); err != nil {
			return meta, fmt.Errorf("%w: delete %s: %w", ErrBackup, name, err)
		}
	} else if !streams.IsNotFound(err) {
		return meta, fmt.Errorf("%w: %s: %w", ErrBackup, name, err)
	}
	req, _ := json.Marshal(map[string]json.RawMessage{"config": meta.Config, "state": meta.State})
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := nc.RequestWithContext(rctx, apiRestore+name, req)
	cancel()
	if err != nil {
		return meta, fmt.Errorf("%w: restore %s: %w", ErrBackup, name, err)
	}
	var rr struct {
		Error          *apiError `json:"error"`
		DeliverSubject string    `json:"deliver_subject"`
	}
	if err := json.Unmarshal(resp.Data, &rr); err != nil {
		return meta, fmt.Errorf("%w: restore %s: %w", ErrBackup, name, err)
	}
	if rr.Error != nil {
		return meta, rr.Error.err("restore " + name)
	}
	buf := make([]byte, snapshotChunk)
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			if err := sendChunk(ctx, nc, rr.DeliverSubject, buf[:n], name); err != nil {
				return meta, err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return meta, fmt.Errorf("%w: read %s: %w", ErrBackup, name, rerr)
		}
	}
	// An empty chunk ends the transfer; the reply is the stream info.
	rctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
	resp, err = nc.RequestWithContext(rctx, rr.DeliverSubject, nil)
	cancel()
	if err != nil {
		return meta, fmt.Errorf("%w: finish restore of %s: %w", ErrBackup, name, err)
	}
	var done struct {
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &done); err != nil {
		return meta, fmt.Errorf("%w: finish restore of %s: %w", ErrBackup, name, err)
	}
	return meta, done.Error.err("restore " + name)
}

// sendChunk sends one chunk and waits for the server's acknowledgement
// (an empty reply; a JSON error otherwise).
func sendChunk(ctx context.Context, nc *nats.Conn, subj string, chunk []byte, name string) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := nc.RequestWithContext(rctx, subj, chunk)
	if err != nil {
		return fmt.Errorf("%w: restore %s: send chunk: %w", ErrBackup, name, err)
	}
	if len(resp.Data) > 0 {
		var e struct {
			Error *apiError `json:"error"`
		}
		if json.Unmarshal(resp.Data, &e) == nil && e.Error != nil {
			return e.Error.err("restore " + name)
		}
	}
	return nil
}
