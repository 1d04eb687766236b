package natsserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// TaskKeyFile is the task signing key's file in the data directory.
const TaskKeyFile = "task-key"

// EnsureSecretFile returns the secret in path, first writing n random bytes
// there (hex, mode 0600, its directory 0700) when the file does not exist.
// Two processes starting at once agree on one secret (O_EXCL). A file others
// may read is refused: its secret is no longer one.
func EnsureSecretFile(path string, n int) (string, error) {
	s, err := ReadSecretFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	if err := SecureDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	raw := make([]byte, n)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadSecretFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	secret := hex.EncodeToString(raw)
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return secret, nil
}

// ReadSecretFile reads a secret file (surrounding white space dropped),
// refusing one that others may read.
func ReadSecretFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: %s is readable by others (mode %v); chmod 600 it", streams.ErrInvalidConfig, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%w: %s is empty", streams.ErrInvalidConfig, path)
	}
	return s, nil
}

// LoadTaskKey reads the task signing key from path; with generate, a
// missing file is created with a new key (rein serve's default on the
// embedded server, DATA-DIR/task-key) and one others may read is refused. Every process running the injector, a fused detector
// or the agent worker of one rein must hold the same key.
func LoadTaskKey(path string, generate bool) (*schemas.TaskKey, error) {
	var s string
	var err error
	if generate {
		s, err = EnsureSecretFile(path, schemas.MinTaskKeyBytes)
	} else {
		// An operator's file (a Kubernetes or Docker secret, mounted with
		// the platform's own modes): its protection is the platform's.
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			s = strings.TrimSpace(string(b))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("task key: %w", err)
	}
	k, err := schemas.NewTaskKey([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%w: task key %s: %w", streams.ErrInvalidConfig, path, err)
	}
	return k, nil
}
