package natsserver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockFile is the file in the data directory that the process running the
// embedded server holds an exclusive lock on (LockDataDir). It says which
// process holds it: "pid N, started T".
const LockFile = "rein.lock"

// DirLock is a held lock on a data directory.
type DirLock struct{ f *os.File }

// LockDataDir takes the exclusive lock on dir (created 0700 when missing)
// that one embedded server holds for as long as it runs: two JetStream
// servers on one store would corrupt it. The lock is flock(2) on
// dir/LockFile, so the kernel drops it when the holder exits, kill -9
// included; the file then stays, and the next holder rewrites it. When
// another process holds it the error wraps ErrDataDirInUse and names that
// process. Commands that only read the directory (the keys, the task key)
// never take it.
func LockDataDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 256))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "a process starting now"
			}
			return nil, fmt.Errorf("%w: %s is held by another rein process (%s; lock file %s): stop that process, or give this one another --data-dir",
				ErrDataDirInUse, dir, who, path)
		}
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	stamp := fmt.Sprintf("pid %d, started %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(stamp), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the lock (closing the file releases it); the file stays.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
