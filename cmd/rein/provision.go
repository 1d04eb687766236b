package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newProvisionCmd) }

func newProvisionCmd() *cobra.Command {
	var sf serverFlags
	cmd := &cobra.Command{
		Use:   "provision",
		Short: "Create or update every rein stream and the conversations bucket on an external NATS, then exit",
		Long: `provision creates every rein stream and the conversations KV bucket on an external NATS server or
cluster, or brings existing ones to the configured replicas, placement and limits (never lowering
their replicas), and exits. It needs an identity that may create streams: the admin seed of
--nats-keys-dir, or --nats-nkey/--nats-creds/--nats-user.

rein serve provisions at start when its identity may (the embedded server, or admin); a deployment
whose stage processes run under their own identities (--nats-keys-dir without admin.nk) runs this
once first, e.g. as a Kubernetes Job or a compose service the stages depend on:

  rein provision --nats-url nats://nats:4222 --nats-keys-dir /run/secrets/rein --stream-replicas 3

` + sourcesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := loadFileConfig(configFlag(cmd))
			if err != nil {
				return err
			}
			if err := applySources(cmd, file); err != nil {
				return err
			}
			if sf.nats.url == "" {
				return fmt.Errorf("%w: provision is for an external NATS (--nats-url); rein serve provisions its embedded server itself", streams.ErrInvalidConfig)
			}
			prov, err := provisionConfig(file)
			if err != nil {
				return err
			}
			if err := replicationConfig(&sf, &prov); err != nil {
				return err
			}
			cc, err := sf.nats.connectConfig("rein-provision")
			if err != nil {
				return err
			}
			if sf.natsKeysDir != "" {
				if err := checkKeysDir(&sf); err != nil {
					return err
				}
				if cc.NkeyFile, err = natsserver.SeedDir(sf.natsKeysDir).Seed(natsserver.IdentityAdmin); err != nil {
					return err
				}
			}
			log, err := telemetry.NewLoggerFormat(os.Stderr, "info", "text")
			if err != nil {
				return err
			}
			// A job started with the cluster may come before it listens.
			nc, err := connectRetrying(cmd.Context(), cc, pipeline.ProvisionTimeout, func(err error) {
				log.Info("NATS not reachable yet; retrying", "url", cc.URL, "err", err)
			})
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := natsserver.NewJetStream(nc)
			if err != nil {
				return fmt.Errorf("jetstream: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), pipeline.ProvisionTimeout)
			defer cancel()
			if err := natsserver.Provision(ctx, js, prov, log); err != nil {
				return err
			}
			return printProvisioned(ctx, cmd, js)
		},
	}
	sf.nats.bindConn(cmd, "")
	sf.bindStreams(cmd.Flags())
	return cmd
}

// printProvisioned lists each stream with the replicas it now has.
func printProvisioned(ctx context.Context, cmd *cobra.Command, js jetstream.JetStream) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "STREAM\tREPLICAS\tMESSAGES")
	for _, name := range slices.Concat(natsserver.StreamNames, []string{"KV_" + bus.BucketConversations}) {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		info := s.CachedInfo()
		fmt.Fprintf(w, "%s\t%d\t%d\n", name, info.Config.Replicas, info.State.Msgs)
	}
	return w.Flush()
}

// connectRetrying connects, trying again while the servers are not
// reachable (not yet listening, or unknown to DNS yet) for up to within;
// onRetry hears each failed attempt. Other errors (credentials refused)
// end it at once.
func connectRetrying(ctx context.Context, cc natsserver.ConnectConfig, within time.Duration, onRetry func(error)) (*nats.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	wait := 200 * time.Millisecond
	for {
		nc, err := natsserver.Connect(cc)
		if err == nil {
			return nc, nil
		}
		if !errors.Is(err, nats.ErrNoServers) && !errors.Is(err, nats.ErrTimeout) {
			return nil, err
		}
		onRetry(err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (still unreachable after %s)", err, within)
		case <-time.After(wait):
		}
		wait = min(2*wait, 3*time.Second)
	}
}
