package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newKeysCmd) }

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "The embedded NATS server's identities: list them, add a tenant's ingress identity",
		Long: `keys manages the nkeys of the embedded NATS server, kept in DATA-DIR/nats-keys (0700, one seed
file per identity, 0600). rein serve generates the stages' and admin's identities on first
start; each may only publish and subscribe to what its stage consumes and produces
(streams/permissions.go).

A platform that sends turns over NATS gets an identity of its own, bound to one tenant: it may
send only that tenant's user and agent turns to rein's ingest (rein.ingest.<tenant>.<conv>.user|agent,
which stores them under ids rein derives) and ask the sidecar only for that tenant. It may publish
into no stream itself.

  rein keys list --data-dir ./data
  rein keys add-tenant acme --data-dir ./data     a running serve loads it; give the platform
                                                   the printed seed file (connect with it as an nkey)
  rein keys server-config --data-dir ./data > rein-auth.conf
                                                   the same identities and permissions as a nats-server
                                                   authorization block, for an external cluster: include
                                                   it there and give each rein process the seed files of
                                                   its identities (serve --nats-keys-dir DIR; see
                                                   deploy/compose and deploy/k8s)
  rein keys server-config --data-dir ./data --helm-values > rein-auth-values.yaml
                                                   the same as values of the official NATS Helm chart
                                                   (public keys only): helm install … -f rein-auth-values.yaml`,
	}
	var dataDir string
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", "./data", "data directory of the embedded server")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the identities and their public keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := natsserver.EnsureKeyring(dataDir)
			if err != nil {
				return err
			}
			for _, id := range k.Names() {
				fmt.Fprintf(cmd.OutOrStdout(), "%-24s %s  %s\n", id, k.PublicKey(id), k.SeedFile(id))
			}
			return nil
		},
	}, newServerConfigCmd(&dataDir), &cobra.Command{
		Use:   "add-tenant TENANT",
		Short: "Generate (or keep) a tenant's ingress identity and print its seed file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seed, err := natsserver.AddTenantIngress(dataDir, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), seed)
			fmt.Fprintln(cmd.ErrOrStderr(), "a running rein serve on this data directory loads it within "+natsserver.DefaultKeyringPoll.String()+"; the identity may send only rein.ingest."+args[0]+".<conv>.user|agent and must connect with the inbox prefix "+bus.TenantInbox(args[0]))
			return nil
		},
	}, &cobra.Command{
		Use:   "remove-tenant TENANT",
		Short: "Delete a tenant's ingress identity; a running serve drops it and its connections within seconds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := natsserver.RemoveTenantIngress(dataDir, args[0]); err != nil {
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "removed; a running rein serve on this data directory refuses the key within "+natsserver.DefaultKeyringPoll.String())
			return nil
		},
	})
	return cmd
}

// newServerConfigCmd prints the keyring's identities and permissions for
// an external nats-server: a configuration block, or Helm values.
func newServerConfigCmd(dataDir *string) *cobra.Command {
	var helmValues bool
	cmd := &cobra.Command{
		Use:   "server-config",
		Short: "Print a nats-server authorization block (or NATS Helm chart values) with rein's identities and their permissions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := natsserver.EnsureKeyring(*dataDir)
			if err != nil {
				return err
			}
			if helmValues {
				return k.WriteHelmValues(cmd.OutOrStdout())
			}
			return k.WriteAuthorization(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&helmValues, "helm-values", false, "print a values file of the official NATS Helm chart (config.merge.authorization) instead of a nats.conf block")
	return cmd
}
