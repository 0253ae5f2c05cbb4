package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/vfs"
)

// SASL credentials in a cluster (docs/security.md, "In a cluster"). The
// users are in the replicated metadata (meta.SetCredential,
// meta.DeleteCredential): the server looks them up in the metadata this
// node applied, and changes them through the controller. A cluster whose
// metadata never held credentials is seeded from a node's
// sasl-credentials file (seglog users add DIR): every node started with
// SASL on proposes its file's users, as one bootstrap command, until the
// metadata's credentials are in force; the first applied wins, and from
// then on the files are ignored (a node whose file differs says so).

// CredentialsFile is the file, under DIR/.cluster_node, where a node
// records which users are in force as it last applied the metadata (no
// secret: names, mechanisms, iterations), for seglog users list to read
// without a lock, without writing, whether or not the node runs.
const CredentialsFile = "credentials.json"

// Operations of the forwarding protocol (forward.go) for credentials.
const (
	opSetCredentials   = "set-credentials"
	opDeleteCredential = "delete-credential"
)

// CredentialRecord is what CredentialsFile holds.
type CredentialRecord struct {
	// Node is the id of the node that wrote it.
	Node int32 `json:"node"`
	// MetaIndex is the index of the metadata state it describes.
	MetaIndex uint64 `json:"metaIndex"`
	// InForce says the metadata's credentials are the cluster's users
	// (meta.State.CredentialsInForce); before, the nodes' files seed
	// them, and Users is empty.
	InForce bool `json:"inForce"`
	// Users lists the credentials, by user then mechanism.
	Users []CredentialInfo `json:"users"`
}

// CredentialInfo is one credential in the record, without its secrets.
type CredentialInfo struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// ReadCredentialRecord reads the record a cluster node keeps in dir,
// read-only: an error matching fs.ErrNotExist when there is none,
// ErrDamaged naming the file and byte when it does not parse.
func ReadCredentialRecord(fsys vfs.FS, dir string) (CredentialRecord, error) {
	var r CredentialRecord
	return r, readNodeJSON(fsys, dir, CredentialsFile, &r)
}

// Credentials returns the cluster's SASL users as this node applied them,
// for server.SASLConfig.Credentials: a Put or Remove goes through the
// controller and returns once this node has applied it.
func (n *Node) Credentials() server.CredentialStore { return credentialStore{n} }

type credentialStore struct{ n *Node }

func fromMeta(c meta.Credential) server.Credential {
	return server.Credential{User: c.User, Mechanism: c.Mechanism, Iterations: int(c.Iterations),
		Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

func toMeta(c server.Credential) meta.Credential {
	return meta.Credential{User: c.User, Mechanism: c.Mechanism, Iterations: int32(min(c.Iterations, 1<<31-1)),
		Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

func (c credentialStore) Lookup(user, mech string) (server.Credential, bool) {
	cr, ok := c.n.meta.State().Credential(user, mech)
	if !ok {
		return server.Credential{}, false
	}
	return fromMeta(cr), true
}

func (c credentialStore) List() []server.Credential {
	list := c.n.meta.State().Credentials()
	out := make([]server.Credential, len(list))
	for i, cr := range list {
		out[i] = fromMeta(cr)
	}
	return out
}

func (c credentialStore) Put(ctx context.Context, cr server.Credential) error {
	resp, err := c.n.forward(ctx, request{Op: opSetCredentials, Broker: c.n.cfg.NodeID, Credentials: []meta.Credential{toMeta(cr)}})
	if err != nil {
		return err
	}
	return c.n.waitApplied(ctx, resp.Index)
}

// Remove answers found false for a credential the metadata does not
// hold; a delete retried after its first answer was lost (the controller
// changed meanwhile) answers so too.
func (c credentialStore) Remove(ctx context.Context, user, mech string) (bool, error) {
	resp, err := c.n.forward(ctx, request{Op: opDeleteCredential, Broker: c.n.cfg.NodeID, User: user, Mechanism: mech})
	if errors.Is(err, meta.ErrUnknownCredential) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.n.waitApplied(ctx, resp.Index)
}

// handleCredential proposes a forwarded credential change on the
// controller.
func (n *Node) handleCredential(ctx context.Context, req request) response {
	var c meta.Command = &meta.DeleteCredential{User: req.User, Mechanism: req.Mechanism}
	if req.Op == opSetCredentials {
		c = &meta.SetCredential{Credentials: req.Credentials, Bootstrap: req.Bootstrap}
	}
	res, err := n.meta.Propose(ctx, c)
	if err != nil {
		return errResponse(err)
	}
	return response{Index: res.Index}
}

// credentialLoop, once the node knows its cluster, seeds the metadata's
// credentials from Config.Credentials while they are not in force, warns
// once if they are and the file differs, and keeps CredentialsFile
// current.
func (n *Node) credentialLoop() {
	defer n.wg.Done()
	select {
	case <-n.ready:
	case <-n.ctx.Done():
		return
	}
	var seeds []server.Credential
	if n.cfg.Credentials != nil {
		seeds = n.cfg.Credentials.List()
	}
	// After a restart the metadata is replayed from the start: the
	// record on disk stays until the replay passes it, as the replica
	// record does.
	var floor uint64
	if prev, err := ReadCredentialRecord(n.cfg.FS, n.cfg.Dir); err == nil {
		floor = prev.MetaIndex
	}
	var last *CredentialRecord
	seeded, warned, failures := false, false, 0
	for {
		st, changed := n.meta.Watch()
		var retry <-chan time.Time
		switch {
		case n.cfg.Credentials == nil:
		case !st.CredentialsInForce() && len(seeds) == 0:
			if !warned {
				// Another node's file may seed them in a moment; if
				// none has users, nobody can log in, and this says why.
				n.log.Warn("cluster: SASL is on, the cluster has no users yet and this node's " + server.CredentialsFile +
					" has none to propose: no client can log in until a node starts with users in its file (seglog users add DIR NAME --password P)")
				warned = true
			}
		case !st.CredentialsInForce() && !seeded:
			if seeded = n.seedCredentials(seeds, failures); !seeded {
				failures++
				retry = time.After(n.cfg.HeartbeatInterval)
			}
		case st.CredentialsInForce() && !warned && len(seeds) > 0 && !sameCredentials(seeds, st.Credentials()):
			n.log.Warn("cluster: this node's " + server.CredentialsFile + " differs from the cluster's users and is ignored: the replicated metadata holds them " +
				"(seglog users list DIR shows them; change them with kafka-configs.sh --alter --entity-type users)")
			warned = true
		}
		if rec := credentialRecord(n.cfg.NodeID, st); rec.MetaIndex >= floor && (last == nil || !sameRecord(*last, rec)) {
			if err := n.writeNodeJSON(CredentialsFile, rec); err != nil {
				n.log.Warn("cluster: writing the credentials record", "err", err)
				retry = time.After(syncRetry)
			} else {
				last = &rec
			}
		}
		select {
		case <-changed:
		case <-retry:
		case <-n.ctx.Done():
			return
		}
	}
}

// seedCredentials proposes seeds as the cluster's first users, through
// the controller; true once done here or by another node.
func (n *Node) seedCredentials(seeds []server.Credential, failures int) bool {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
	defer cancel()
	list := make([]meta.Credential, len(seeds))
	for i, cr := range seeds {
		list[i] = toMeta(cr)
	}
	_, err := n.forward(ctx, request{Op: opSetCredentials, Broker: n.cfg.NodeID, Credentials: list, Bootstrap: true})
	switch {
	case err == nil:
		n.log.Info(fmt.Sprintf("cluster: the %d SASL credentials of this node's %s are the cluster's users from now on", len(seeds), server.CredentialsFile))
		return true
	case errors.Is(err, meta.ErrCredentialsInForce):
		return true // another node's file won; the loop compares
	case errors.Is(err, ErrClosed):
		return false
	}
	// Retried at every heartbeat interval: loud once, quiet after.
	level := n.log.Debug
	if failures == 0 {
		level = n.log.Warn
	}
	level("cluster: proposing this node's SASL users to the cluster (retried)", "err", err)
	return false
}

// sameCredentials reports whether the file's credentials are exactly the
// metadata's.
func sameCredentials(file []server.Credential, st []meta.Credential) bool {
	if len(file) != len(st) {
		return false
	}
	for i := range file {
		if !reflect.DeepEqual(toMeta(file[i]), st[i]) {
			return false
		}
	}
	return true
}

func credentialRecord(node int32, st *meta.State) CredentialRecord {
	rec := CredentialRecord{Node: node, MetaIndex: st.Index(), InForce: st.CredentialsInForce(), Users: []CredentialInfo{}}
	for _, c := range st.Credentials() {
		rec.Users = append(rec.Users, CredentialInfo{User: c.User, Mechanism: c.Mechanism, Iterations: c.Iterations})
	}
	return rec
}

// sameRecord compares what the tools show, not the index: the record is
// written when the users change, not at every metadata change.
func sameRecord(a, b CredentialRecord) bool {
	return a.InForce == b.InForce && reflect.DeepEqual(a.Users, b.Users)
}
