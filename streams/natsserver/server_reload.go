package natsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// embeddedOpts keeps the options each embedded server was started with
// (nats-server has no public getter), so that ReloadUsers can change its
// users and nothing else.
var embeddedOpts sync.Map // *server.Server → *server.Options

// remember records s's options until it shuts down.
func remember(s *server.Server, opts *server.Options) {
	embeddedOpts.Store(s, opts)
	go func() {
		s.WaitForShutdown()
		embeddedOpts.Delete(s)
	}()
}

// ReloadUsers replaces the users of an embedded server started by
// StartEmbedded, without a restart: a new user can connect at once, and
// the server closes the connections of a user it no longer has.
func ReloadUsers(s *server.Server, users []*server.NkeyUser) error {
	v, ok := embeddedOpts.Load(s)
	if !ok {
		return errors.New("reload users: not a running server of StartEmbedded")
	}
	opts := v.(*server.Options).Clone()
	opts.Nkeys = opts.Nkeys[:0]
	for _, u := range users {
		cp := *u
		opts.Nkeys = append(opts.Nkeys, &cp)
	}
	if err := s.ReloadOptions(opts); err != nil {
		return fmt.Errorf("reload users: %w", err)
	}
	embeddedOpts.Store(s, opts)
	return nil
}

// DefaultKeyringPoll is how often a running serve looks for tenant
// identities added or removed with rein keys.
const DefaultKeyringPoll = 2 * time.Second

// WatchTenants reloads an embedded server's users whenever the data
// directory's keyring gains or loses a tenant's ingress identity (rein
// keys add-tenant / remove-tenant), every poll, until ctx ends: a tenant
// is added or removed without restarting serve. A keyring that does not
// read is logged and tried again at the next poll; the server keeps the
// users it has.
func WatchTenants(ctx context.Context, s *server.Server, dataDir string, poll time.Duration, log *slog.Logger) {
	if poll <= 0 {
		poll = DefaultKeyringPoll
	}
	last := ""
	if v, ok := embeddedOpts.Load(s); ok {
		last = usersKey(v.(*server.Options).Nkeys)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, users, err := ServerAuth(dataDir)
		if err != nil {
			log.Warn("NATS identities: the keyring does not read; keeping the loaded users", "err", err)
			continue
		}
		key := usersKey(users)
		if key == last {
			continue
		}
		if err := ReloadUsers(s, users); err != nil {
			log.Error("NATS identities: reload failed; keeping the loaded users", "err", err)
			continue
		}
		last = key
		log.Info("NATS identities reloaded", "users", len(users))
	}
}

// usersKey identifies a set of users by their public keys.
func usersKey(users []*server.NkeyUser) string {
	keys := make([]string, 0, len(users))
	for _, u := range users {
		keys = append(keys, u.Nkey)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// RemoveTenantIngress deletes a tenant's ingress identity from dataDir's
// keyring; a running serve drops the user (and its connections) at its
// next poll (WatchTenants). Removing a tenant that has none is no error.
func RemoveTenantIngress(dataDir, tenant string) error {
	if _, err := TenantIngressPermissions(tenant); err != nil {
		return err
	}
	path := filepath.Join(KeysDir(dataDir), tenantPrefix+tenant+seedExt)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
