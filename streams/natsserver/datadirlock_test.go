package natsserver_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/reinception/rein/streams/natsserver"
)

// One holder per data directory: a second lock, even from the same
// process, is refused naming the holder; after Unlock it is free again.
func TestLockDataDirHasOneHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := natsserver.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = natsserver.LockDataDir(dir)
	if !errors.Is(err, natsserver.ErrDataDirInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second lock: %v, want ErrDataDirInUse naming pid %d", err, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := natsserver.LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	_ = l2.Unlock()
}
