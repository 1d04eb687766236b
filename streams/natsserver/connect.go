package natsserver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams"
)

// ConnectConfig says how to reach NATS: an external server or cluster by URL
// (with credentials and TLS), or the embedded server in-process.
type ConnectConfig struct {
	URL      string // comma-separated server URLs
	Creds    string // .creds file (JWT + nkey seed)
	NkeyFile string // nkey seed file (rein's generated identities: Keyring.SeedFile)
	// User and Password, or Token, for servers set up that way; they come
	// from files or the environment, never from a command line.
	User     string
	Password string
	Token    string
	TLSCA    string
	TLSCert  string
	TLSKey   string
	Name     string // connection name shown by the server
	// AsyncErrors, when set, receives the server's asynchronous errors on
	// this connection (a permissions violation, a slow consumer); a full
	// channel drops them.
	AsyncErrors chan<- error
	// InProcess, when set, connects to this embedded server without a
	// socket, through a buffered in-process connection (inprocess.go);
	// InProcessUnbuffered uses the server's bare pipe instead.
	InProcess           *server.Server
	InProcessUnbuffered bool
	// InboxPrefix, when set, replaces _INBOX for this connection's reply
	// subjects; a tenant's identity needs TenantInbox(tenant).
	InboxPrefix string
}

// DefaultURL is the address commands use to reach a running rein.
const DefaultURL = "nats://127.0.0.1:4222"

// Connect opens a NATS connection that reconnects forever.
func Connect(c ConnectConfig) (*nats.Conn, error) {
	name := c.Name
	if name == "" {
		name = "rein"
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(5 * time.Second),
		nats.SyncQueueLen(streams.SyncQueueLen),
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.NkeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(c.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: nkey %s: %w", streams.ErrInvalidConfig, c.NkeyFile, err)
		}
		opts = append(opts, o)
	}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.TLSCert != "" || c.TLSKey != "" {
		if c.TLSCert == "" || c.TLSKey == "" {
			return nil, fmt.Errorf("%w: TLS cert and key go together", streams.ErrInvalidConfig)
		}
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	if c.AsyncErrors != nil {
		ch := c.AsyncErrors
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case ch <- err:
			default:
			}
		}))
	}
	url := c.URL
	if c.InProcess != nil {
		if c.InProcessUnbuffered {
			opts = append(opts, nats.InProcessServer(c.InProcess))
		} else {
			opts = append(opts, nats.InProcessServer(bufferedInProcess{c.InProcess}))
		}
		// No socket, so no TLS: the server does not require it in-process.
		url = strings.Replace(c.InProcess.ClientURL(), "tls://", "nats://", 1)
	}
	if url == "" {
		url = DefaultURL
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w%s", url, err, connectHint(c, err))
	}
	return nc, nil
}

// connectHint says how to fix a failed connection: nothing listening, or
// credentials the server refused.
func connectHint(c ConnectConfig, err error) string {
	switch {
	case errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout):
		return " (nothing answers there: start rein serve, or give --nats-url the address of your NATS)"
	case errors.Is(err, nats.ErrAuthorization):
		switch {
		case c.NkeyFile != "":
			return " (the server does not know the key in " + c.NkeyFile + ": is it this rein's data dir? see rein keys list)"
		case c.Creds != "" || c.User != "" || c.Token != "":
			return " (the server refused these credentials)"
		default:
			return " (no credentials given: rein's NATS needs a key; pass --data-dir of the running rein (its nats-keys/admin.nk) or --nats-nkey, --nats-creds)"
		}
	}
	return ""
}

// NewJetStream is jetstream.New with rein's publishing bounds: an
// asynchronous publish whose acknowledgement never comes (lost in a leader
// change or a reconnect) is resolved with ErrAsyncPublishTimeout after
// streams.DefaultAckTimeout and removed from the pending set. Without that bound
// such publishes stay pending for ever, and once the pending set is full
// every later publish on the connection stalls. It sets no ack or error
// callback: such a callback would see a message after its acknowledgement,
// when the Publisher has already handed its header map on for reuse.
func NewJetStream(nc *nats.Conn) (jetstream.JetStream, error) {
	return jetstream.New(nc, jetstream.WithPublishAsyncTimeout(streams.DefaultAckTimeout))
}
