package streams

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerConfig configures the embedded nats-server.
type ServerConfig struct {
	// DataDir holds JetStream's file storage.
	DataDir string
	// Listen is host:port for client connections; empty means no listener
	// (in-process connections only).
	Listen string
	// Authentication; at least one is required for a non-loopback Listen.
	User, Password string
	Token          string
	// NKeys are user public keys allowed to connect.
	NKeys []string
	// ServerName names the node (default "rein").
	ServerName string
	// StartTimeout bounds waiting for the server to be ready (default 10s).
	StartTimeout time.Duration
	// SyncAlways fsyncs every JetStream write (the durable profile).
	SyncAlways bool
}

// DefaultListen is the embedded server's default client address.
const DefaultListen = "127.0.0.1:4222"

func (c ServerConfig) hasAuth() bool {
	return (c.User != "" && c.Password != "") || c.Token != "" || len(c.NKeys) > 0
}

// Validate checks the configuration, refusing a non-loopback listen address
// without authentication.
func (c ServerConfig) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("%w: data dir is empty", ErrConfig)
	}
	if c.Listen == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrConfig, c.Listen, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("%w: listen port %q is not a number", ErrConfig, port)
	}
	if !IsLoopbackHost(host) && !c.hasAuth() {
		return fmt.Errorf("%w: %s (set a user and password, a token or nkeys)", ErrInsecureListen, c.Listen)
	}
	if (c.User == "") != (c.Password == "") {
		return fmt.Errorf("%w: user and password go together", ErrConfig)
	}
	return nil
}

// IsLoopbackHost tells whether host (a name or an address, no port) is
// localhost or a loopback address.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// portFree fails at once, naming the address and the fix, when another
// process holds the client port (the server itself would only time out
// after StartTimeout, saying nothing of why). 4222 is every local NATS's.
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: %s is already in use (another NATS server or rein?): stop it, or give --nats-listen another address, or --nats-url to use that server", ErrNotReady, addr)
		}
		return fmt.Errorf("%w: cannot listen on %s: %w", ErrNotReady, addr, err)
	}
	return ln.Close()
}

// StartEmbedded starts a JetStream-enabled nats-server in this process and
// waits until it accepts connections.
func StartEmbedded(c ServerConfig) (*server.Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// The data directory holds customers' conversations: private to the
	// process's user (0700), created so or tightened if it exists.
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", c.DataDir, err)
	}
	if err := os.Chmod(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", c.DataDir, err)
	}
	opts := &server.Options{
		ServerName: c.ServerName,
		JetStream:  true,
		StoreDir:   c.DataDir,
		NoSigs:     true,
		NoLog:      true,
		// Rein's largest message is a dead letter wrapping an oversize input.
		MaxPayload: 8 << 20,
		SyncAlways: c.SyncAlways,
	}
	if opts.ServerName == "" {
		opts.ServerName = "rein"
	}
	if c.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, _ := net.SplitHostPort(c.Listen)
		opts.Host = host
		opts.Port, _ = strconv.Atoi(port)
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT
		} else if err := portFree(c.Listen); err != nil {
			return nil, err
		}
	}
	switch {
	case c.User != "":
		opts.Username, opts.Password = c.User, c.Password
	case c.Token != "":
		opts.Authorization = c.Token
	case len(c.NKeys) > 0:
		for _, k := range c.NKeys {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k})
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	go s.Start()
	timeout := c.StartTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if !s.ReadyForConnections(timeout) {
		s.Shutdown()
		return nil, fmt.Errorf("%w after %s", ErrNotReady, timeout)
	}
	return s, nil
}
