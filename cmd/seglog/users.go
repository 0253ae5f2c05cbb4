package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/internal/cluster"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newUsersCmd) }

func newUsersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Add, delete and list the SASL users of a store directory (seglog serve --sasl-mechanisms)",
		Long: `Manage the users seglog serve --sasl-mechanisms authenticates, kept in
DIR/` + server.CredentialsFile + `: per user and mechanism a salt, the iteration count and
SCRAM's StoredKey and ServerKey (KIP-554), never a password, PLAIN included.
A user may have a credential for each mechanism; a client logs in with the
mechanism its credential is for. docs/security.md.

add and delete take the store's lock: a store a server holds is refused,
with the kafka-configs.sh command that does the same through it (SCRAM
only). list opens the store read-only and writes nothing.

On a cluster node's DIR (serve --voters), the file seeds the cluster's
users until its replicated metadata holds them, and is ignored from then
on; list says which is in force. docs/security.md, "In a cluster".`,
	}
	var password, mechanism string
	add := &cobra.Command{
		Use:   "add DIR NAME --password P",
		Short: "Add a user, or replace its credential for --mechanism",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			user := args[1]
			advice := func(addr string) string {
				return fmt.Sprintf("add it through the server: kafka-configs.sh --bootstrap-server %s --alter --add-config '%s=[password=...]' --entity-type users --entity-name %s", addr, mechanism, user)
			}
			// A new store may be made for its first user, before the
			// first seglog serve.
			return withUsersStore(cmd, args[0], true, advice, func(s *store.Store) error {
				creds, err := server.LoadCredentials(s.FS(), s.Dir())
				if err != nil {
					return err
				}
				if err := creds.SetPassword(user, mechanism, password, 0); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Added user %s (%s).\n", user, mechanism)
				return noteIgnored(cmd, s)
			})
		},
	}
	add.Flags().StringVar(&password, "password", "", "the user's password (required)")
	add.Flags().StringVar(&mechanism, "mechanism", server.MechanismSCRAMSHA256, "the SASL mechanism the credential is for")
	_ = add.MarkFlagRequired("password")
	oneOf(add, "mechanism", server.Mechanisms...)

	var delMech string
	del := &cobra.Command{
		Use:   "delete DIR NAME",
		Short: "Delete a user's credentials (every mechanism's, or --mechanism's)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			user := args[1]
			advice := func(addr string) string {
				return fmt.Sprintf("delete it through the server: kafka-configs.sh --bootstrap-server %s --alter --delete-config 'SCRAM-SHA-256' --entity-type users --entity-name %s", addr, user)
			}
			return withUsersStore(cmd, args[0], false, advice, func(s *store.Store) error {
				creds, err := server.LoadCredentials(s.FS(), s.Dir())
				if err != nil {
					return err
				}
				n, err := creds.Delete(user, delMech)
				if err != nil {
					return err
				}
				if n == 0 {
					return fmt.Errorf("no such user: %s", user)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted user %s (%d credentials).\n", user, n)
				return noteIgnored(cmd, s)
			})
		},
	}
	del.Flags().StringVar(&delMech, "mechanism", "", "delete only this mechanism's credential")
	oneOf(del, "mechanism", append([]string{""}, server.Mechanisms...)...)

	list := &cobra.Command{
		Use:   "list DIR",
		Short: "List the users, their mechanisms and iteration counts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return readStore(cmd, args[0], func(s *store.Store) error {
				creds, err := server.LoadCredentials(s.FS(), s.Dir())
				if err != nil {
					return err
				}
				var rows []cluster.CredentialInfo
				for _, c := range creds.List() {
					rows = append(rows, cluster.CredentialInfo{User: c.User, Mechanism: c.Mechanism, Iterations: int32(c.Iterations)})
				}
				rec, isCluster, err := clusterUsers(s)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				switch {
				case rec.InForce:
					fmt.Fprintf(out, "In force: the cluster's users, from its replicated metadata as node %d last applied it (index %d); %s (%d credentials) is ignored.\n",
						rec.Node, rec.MetaIndex, server.CredentialsFile, len(rows))
					rows = rec.Users
				case isCluster:
					fmt.Fprintf(out, "In force: %s, until the cluster's metadata holds users: a node started with --sasl-mechanisms proposes its file's users as the cluster's first ones.\n",
						server.CredentialsFile)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
				for _, c := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%d\n", c.User, c.Mechanism, c.Iterations)
				}
				return tw.Flush()
			})
		},
	}
	cmd.AddCommand(add, del, list)
	acceptDirFirst(cmd)
	return cmd
}

// withUsersStore is withStore for the users' file. A cluster node's DIR
// keeps one too (its first users seed the cluster's), so such a store is
// opened as its node opens it (store.Options.ReplicatedOffsets), which
// writes nothing to the replicas: only the users' file is written. Any
// other store is opened as withStore does.
func withUsersStore(cmd *cobra.Command, dir string, create bool, advice func(addr string) string, f func(*store.Store) error) error {
	node, err := cluster.IsClusterDir(vfs.Default, dir)
	if err != nil {
		return err
	}
	if !node {
		return withStore(cmd, dir, create, advice, f)
	}
	s, err := openStoreAs(dir, store.Options{Logger: storeLogger(cmd), Existing: true, Holder: holderOf(cmd), ReplicatedOffsets: true})
	return runOpened(s, err, advice, f)
}

// clusterUsers reads, for a cluster node's DIR, the users its node last
// recorded as in force (cluster.CredentialsFile), read-only; isCluster
// is false, and rec empty, for a single node's store, and rec is empty
// for a node that has recorded none yet.
func clusterUsers(s *store.Store) (rec cluster.CredentialRecord, isCluster bool, err error) {
	if isCluster, err = cluster.IsClusterDir(s.FS(), s.Dir()); err != nil || !isCluster {
		return rec, isCluster, err
	}
	rec, err = cluster.ReadCredentialRecord(s.FS(), s.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return rec, true, err
}

// noteIgnored tells who changed a cluster node's file, once the
// cluster's users are in force, that the change does nothing there.
func noteIgnored(cmd *cobra.Command, s *store.Store) error {
	rec, _, err := clusterUsers(s)
	if err == nil && rec.InForce {
		fmt.Fprintf(cmd.ErrOrStderr(), "Note: %s is a cluster node's directory and the cluster's users are in its replicated metadata: this file is ignored. "+
			"Change users through any node: kafka-configs.sh --bootstrap-server HOST:PORT --alter --entity-type users (docs/security.md, \"In a cluster\").\n", s.Dir())
	}
	return nil
}

// checkMechanismsFlag splits --sasl-mechanisms.
func checkMechanismsFlag(cmd *cobra.Command, value string) ([]string, error) {
	var mechs []string
	for _, m := range strings.Split(value, ",") {
		mechs = append(mechs, strings.ToUpper(strings.TrimSpace(m)))
	}
	if err := server.CheckMechanisms(mechs); err != nil {
		return nil, usageErrorf(cmd, "invalid --sasl-mechanisms: %v", err)
	}
	return mechs, nil
}
