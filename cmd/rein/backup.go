package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// newStreamsBackupCmd is `rein streams backup DIR` (attached by streamscmd.go).
func newStreamsBackupCmd() *cobra.Command {
	var nf natsFlags
	var names []string
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Snapshot rein's streams (and the conversations bucket) into DIR with JetStream's snapshot API",
		Long: `backup asks the server for a snapshot of each stream ($JS.API.STREAM.SNAPSHOT) and saves it byte for
byte as DIR/<stream>.snapshot, with the stream's configuration and state in DIR/<stream>.json.
Consumers are included. Each stream's snapshot is consistent in itself; take backups when traffic
is low. Restore with: rein streams restore DIR

DIR must not hold anything yet (a backup never silently replaces another); --overwrite allows it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			if entries, err := os.ReadDir(args[0]); err == nil && len(entries) > 0 && !overwrite {
				return fmt.Errorf("%s already holds %d file(s), perhaps an earlier backup: choose an empty or new directory, or pass --overwrite", args[0], len(entries))
			}
			nc, _, err := connectJS(&nf, "rein-backup")
			if err != nil {
				return err
			}
			defer nc.Close()
			if len(names) == 0 {
				names = audit.BackupStreams()
			}
			metas, err := audit.Backup(cmd.Context(), nc, args[0], names)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STREAM\tSNAPSHOT BYTES")
			for _, m := range metas {
				fmt.Fprintf(tw, "%s\t%d\n", m.Stream, m.Bytes)
			}
			if ferr := tw.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	cmd.Flags().StringSliceVar(&names, "stream", nil, "streams to back up (default every rein stream and KV_"+bus.BucketConversations+")")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "write into a directory that already holds files (an earlier backup's are replaced)")
	return cmd
}

// newStreamsRestoreCmd is `rein streams restore DIR` (attached by streamscmd.go).
func newStreamsRestoreCmd() *cobra.Command {
	var nf natsFlags
	var names []string
	var replace bool
	cmd := &cobra.Command{
		Use:   "restore DIR",
		Short: "Recreate streams from a backup directory with JetStream's restore API",
		Long: `restore sends each DIR/<stream>.snapshot back to the server ($JS.API.STREAM.RESTORE), chunk by
acknowledged chunk, recreating the stream with its configuration, messages, sequences and consumers.
A stream that already exists is refused unless --replace, which deletes it first (rein serve
provisions empty streams at start, so restoring into a fresh installation needs --replace).
Stop the rein stages while restoring.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			cc, err := nf.connectConfig("rein-restore")
			if err != nil {
				return err
			}
			nc, err := natsserver.Connect(cc)
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := natsserver.NewJetStream(nc)
			if err != nil {
				return fmt.Errorf("jetstream: %w", err)
			}
			metas, err := audit.Restore(cmd.Context(), nc, js, args[0], names, replace)
			for _, m := range metas {
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s (%d snapshot bytes, taken %s)\n", m.Stream, m.Bytes, m.Taken.Format("2006-01-02T15:04:05Z"))
			}
			return err
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	cmd.Flags().StringSliceVar(&names, "stream", nil, "streams to restore (default every snapshot in DIR)")
	cmd.Flags().BoolVar(&replace, "replace", false, "delete a stream that already exists before restoring it")
	return cmd
}
