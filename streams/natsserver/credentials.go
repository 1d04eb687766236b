package natsserver

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/reinception/rein/streams"
)

// KeysDirName is the directory, under the data directory, that holds the
// nkey seeds of rein's NATS identities.
const KeysDirName = "nats-keys"

// seedExt ends every seed file: <identity>.nk, or ingress-<tenant>.nk for a
// tenant's ingress identity.
const (
	seedExt      = ".nk"
	tenantPrefix = "ingress-"
)

// SecureDir creates dir (and its parents) when missing and sets its mode to
// 0700: rein's data directory and its keys are readable by their owner only.
func SecureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// Keyring holds the nkeys of rein's NATS identities, one seed file each
// (mode 0600) in one directory (mode 0700). The embedded server is
// configured with their public keys and permissions; each stage connects
// with its own seed file.
type Keyring struct {
	dir     string
	public  map[string]string // identity → public key
	tenants map[string]string // tenant → public key of its ingress identity
}

// KeysDir is the keys directory of a data directory.
func KeysDir(dataDir string) string { return filepath.Join(dataDir, KeysDirName) }

// EnsureKeyring loads the keyring of dataDir, first generating the seed of
// every identity that has none (so on first start, all of them). It also
// loads the tenant ingress identities found there (see AddTenantIngress).
func EnsureKeyring(dataDir string) (*Keyring, error) {
	if err := SecureDir(dataDir); err != nil {
		return nil, err
	}
	dir := KeysDir(dataDir)
	if err := SecureDir(dir); err != nil {
		return nil, err
	}
	k := &Keyring{dir: dir, public: map[string]string{}, tenants: map[string]string{}}
	for _, id := range Identities {
		pub, err := ensureSeed(filepath.Join(dir, id+seedExt))
		if err != nil {
			return nil, err
		}
		k.public[id] = pub
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, tenantPrefix) || !strings.HasSuffix(name, seedExt) {
			continue
		}
		tenant := strings.TrimSuffix(strings.TrimPrefix(name, tenantPrefix), seedExt)
		pub, err := loadSeed(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		k.tenants[tenant] = pub
	}
	return k, nil
}

// ServerAuth is what an embedded server needs to authenticate: dataDir's
// keyring (EnsureKeyring) and its users (Keyring.Users).
func ServerAuth(dataDir string) (*Keyring, []*server.NkeyUser, error) {
	k, err := EnsureKeyring(dataDir)
	if err != nil {
		return nil, nil, err
	}
	users, err := k.Users()
	if err != nil {
		return nil, nil, err
	}
	return k, users, nil
}

// AddTenantIngress generates (or keeps) the seed of a tenant's ingress
// identity in dataDir's keyring and returns its file. A running serve
// loads it within DefaultKeyringPoll (WatchTenants), any server on its
// next start (EnsureKeyring).
func AddTenantIngress(dataDir, tenant string) (string, error) {
	if _, err := TenantIngressPermissions(tenant); err != nil {
		return "", err
	}
	dir := KeysDir(dataDir)
	if err := SecureDir(dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, tenantPrefix+tenant+seedExt)
	if _, err := ensureSeed(path); err != nil {
		return "", err
	}
	return path, nil
}

// SeedFile is the seed file of an identity (IdentityAdmin, a stage, …).
func (k *Keyring) SeedFile(identity string) string { return filepath.Join(k.dir, identity+seedExt) }

// PublicKey returns an identity's public key ("" when unknown); a
// tenant's ingress identity is named ingress-<tenant>.
func (k *Keyring) PublicKey(identity string) string {
	if t, ok := strings.CutPrefix(identity, tenantPrefix); ok && k.tenants[t] != "" {
		return k.tenants[t]
	}
	return k.public[identity]
}

// Names lists the identities: rein's own (Identities), then the tenant
// ingress identities (ingress-<tenant>) sorted.
func (k *Keyring) Names() []string {
	out := slices.Clone(Identities)
	for _, t := range slices.Sorted(maps.Keys(k.tenants)) {
		out = append(out, tenantPrefix+t)
	}
	return out
}

// Users are the embedded server's users: every identity with its
// permissions (Permissions), and every tenant ingress identity bound to its
// tenant.
func (k *Keyring) Users() ([]*server.NkeyUser, error) {
	var out []*server.NkeyUser
	for _, id := range Identities {
		p, err := Permissions(id)
		if err != nil {
			return nil, err
		}
		out = append(out, &server.NkeyUser{Nkey: k.public[id], Permissions: p})
	}
	tenants := make([]string, 0, len(k.tenants))
	for t := range k.tenants {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	for _, t := range tenants {
		u, err := TenantIngressUser(t, k.tenants[t])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(k.dir, tenantPrefix+t+seedExt), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// ensureSeed returns the public key of the seed in path, writing a new user
// seed there (mode 0600) when the file does not exist.
func ensureSeed(path string) (string, error) {
	pub, err := loadSeed(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return pub, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("generate nkey: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("generate nkey: %w", err)
	}
	// O_EXCL: two processes starting at once never overwrite each other's key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadSeed(path)
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(append(seed, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return kp.PublicKey()
}

// loadSeed reads a user seed file and returns its public key. A file others
// may read is refused: its key is no longer a secret.
func loadSeed(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("nkey seed: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: %s is readable by others (mode %v); chmod 600 it", streams.ErrInvalidConfig, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("nkey seed: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return "", fmt.Errorf("nkey seed %s: %w", path, err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("nkey seed %s: %w", path, err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("%w: %s is not a user nkey seed", streams.ErrInvalidConfig, path)
	}
	return pub, nil
}

// SeedFile is the seed file of an identity in dataDir's keyring, whether
// or not it exists yet (client commands look for the admin key there).
func SeedFile(dataDir, identity string) string {
	return filepath.Join(KeysDir(dataDir), identity+seedExt)
}

// SeedDir is a directory of seed files of rein's identities
// (<identity>.nk), as a deployment mounts them for processes on an
// external NATS: each process gets the seeds of the identities it runs as.
type SeedDir string

// Seed returns the seed file of identity, or an error naming the file a
// deployment must provide.
func (d SeedDir) Seed(identity string) (string, error) {
	f := filepath.Join(string(d), identity+seedExt)
	if _, err := os.Stat(f); err != nil {
		return "", fmt.Errorf("%w: no seed file for the NATS identity %s (%s): mount it there, from `rein keys` (rein keys list shows every identity)", streams.ErrInvalidConfig, identity, f)
	}
	return f, nil
}

// Has reports whether d holds identity's seed file; every identity is
// there when d is "" (no keys directory: the embedded server's keyring, or
// one set of credentials for every connection).
func (d SeedDir) Has(identity string) bool {
	if d == "" {
		return true
	}
	_, err := d.Seed(identity)
	return err == nil
}

// Own is the identity a process's own connection uses (provisioning,
// readiness, the dashboard, the stream metrics): admin when its seed is
// there, else reader, which reads every stream but creates none.
func (d SeedDir) Own() (identity, file string, err error) {
	for _, id := range []string{IdentityAdmin, IdentityReader} {
		if f, err := d.Seed(id); err == nil {
			return id, f, nil
		}
	}
	return "", "", fmt.Errorf("%w: %s has neither %s nor %s: a process needs one for its own connection (admin also provisions the streams)",
		streams.ErrInvalidConfig, string(d), IdentityAdmin+seedExt, IdentityReader+seedExt)
}
