package natsserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/reinception/rein/streams"
)

// ServerConfig configures the embedded nats-server.
type ServerConfig struct {
	// DataDir holds JetStream's file storage.
	DataDir string
	// Listen is host:port for client connections; empty means no listener
	// (in-process connections only).
	Listen string
	// Users may connect, each with its nkey and permissions (see
	// Keyring.Users). At least one is required: the embedded server never
	// accepts an unauthenticated connection, in-process ones included.
	Users []*server.NkeyUser
	// TLSCert and TLSKey, when set, make the client port require TLS
	// (in-process connections have no socket and skip it).
	TLSCert, TLSKey string
	// Insecure allows a non-loopback Listen without TLS, where the nkey
	// handshake is safe but every message crosses the network in clear.
	Insecure bool
	// ServerName names the node (default "rein").
	ServerName string
	// StartTimeout bounds waiting for the server to be ready (default 10s).
	StartTimeout time.Duration
	// SyncAlways fsyncs every JetStream write (the durable profile).
	SyncAlways bool
	// Logger receives the server's own warnings and errors (and, at debug,
	// its notices); nil discards them.
	Logger *slog.Logger
}

// DefaultListen is the embedded server's default client address.
const DefaultListen = "127.0.0.1:4222"

// Validate checks the configuration: users are required, and a
// non-loopback listen address needs TLS (or Insecure).
func (c ServerConfig) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("%w: data dir is empty", streams.ErrInvalidConfig)
	}
	if len(c.Users) == 0 {
		return fmt.Errorf("%w: the embedded server needs its users (streams.EnsureKeyring)", ErrNoAuth)
	}
	for _, u := range c.Users {
		if u == nil || u.Nkey == "" || u.Permissions == nil {
			return fmt.Errorf("%w: every user needs a public key and permissions", ErrNoAuth)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("%w: TLS certificate and key go together", streams.ErrInvalidConfig)
	}
	if c.Listen == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", streams.ErrInvalidConfig, c.Listen, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("%w: listen port %q is not a number", streams.ErrInvalidConfig, port)
	}
	if !IsLoopbackHost(host) && c.TLSCert == "" && !c.Insecure {
		return fmt.Errorf("%w: %s (give the server a TLS certificate and key, or allow it explicitly with insecure)", ErrInsecureListen, c.Listen)
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
		// The largest message a client may send (MaxPayloadBytes); the
		// streams take at most MaxMessageBytes.
		MaxPayload: streams.MaxPayloadBytes,
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
	for _, u := range c.Users {
		cp := *u
		opts.Nkeys = append(opts.Nkeys, &cp)
	}
	if c.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: c.TLSCert, KeyFile: c.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("%w: embedded server TLS: %w", streams.ErrInvalidConfig, err)
		}
		opts.TLSConfig, opts.TLS = tc, true
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	if c.Logger != nil {
		s.SetLoggerV2(serverLog{c.Logger}, false, false, false)
	}
	remember(s, opts)
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
