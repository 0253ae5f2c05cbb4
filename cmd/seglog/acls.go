package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
)

func init() { register(newACLsCmd) }

// newACLsCmd is seglog acls: a read-only look at a single node's ACLs.
// They are changed through a running server (CreateAcls, DeleteAcls), as
// in Kafka, so this command never writes.
func newACLsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acls",
		Short: "List the ACLs of a store directory (seglog serve --sasl-mechanisms)",
		Long: `List the ACLs seglog serve authorizes requests with when SASL is on, kept in
DIR/` + server.ACLFile + `. They are created and deleted through the server
(kafka-acls.sh, kadm's CreateACLs and DeleteACLs); this command only reads,
opening the store read-only. A cluster keeps its ACLs in the replicated
metadata instead. docs/security.md, "ACLs".`,
	}
	list := &cobra.Command{
		Use:   "list DIR",
		Short: "List the ACLs: resource, pattern, principal, host, operation, permission",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return readStore(cmd, args[0], func(s *store.Store) error {
				acls, err := server.ReadACLs(s.FS(), s.Dir())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
				for _, a := range acls {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ResourceType, a.Name, a.Pattern,
						a.Principal, a.Host, a.Operation, a.Permission)
				}
				return tw.Flush()
			})
		},
	}
	cmd.AddCommand(list)
	acceptDirFirst(cmd)
	return cmd
}
