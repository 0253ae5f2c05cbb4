package meta

import (
	"fmt"
)

// Command is one change to the metadata: a typed value with a versioned
// binary encoding (Encode, Decode). The controller builds a command with
// everything decided (a new topic's replica assignment and id included),
// so applying it on every node gives the same State.
type Command interface {
	// kind names the command in its encoding.
	kind() kind
	// encodeBody appends the fields after the type and version bytes.
	encodeBody(w *writer)
}

// kind is a command's type byte. Values are part of the log's format:
// never reuse or renumber one.
type kind uint8

const (
	kindRegisterBroker      kind = 1
	kindCreateTopic         kind = 2
	kindDeleteTopic         kind = 3
	kindAlterTopicConfig    kind = 4
	kindCreatePartitions    kind = 5
	kindAllocateProducerIDs kind = 6
	kindSetClusterID        kind = 7
	// 8 and 9 are SetCredential and DeleteCredential (credentials.go).
	kindCreateACLs kind = 10
	kindDeleteACLs kind = 11
	// 12 is kindAlterClientQuotas (quotas.go).
	kindSetBrokerDirectory kind = 13
)

// commandVersion is the version every command type is written with
// today. Each type carries its own version byte, so one command can
// change its fields without the others. A node of an older build skips
// what it cannot decode, and its State then differs from the others':
// a new field goes in a new command, which the older node's State can
// do without (SetBrokerDirectory), not in a new version of one it acts
// on.
const commandVersion = 1

// RegisterBroker adds a broker or updates its addresses; a node sends it
// when it starts (and when its addresses change). Its result carries the
// broker's new epoch.
type RegisterBroker struct {
	// ID is the node id, 0 or more.
	ID int32
	// Host and Port are the advertised Kafka listener.
	Host string
	Port int32
	// RaftAddr is the raft address.
	RaftAddr string
}

// SetBrokerDirectory records the directory.id (KIP-858) of the DIR a
// registered broker runs from, once: the controller proposes it after
// the broker's first registration from a build that sends one, and from
// then on refuses a registration from another directory (a wiped or
// replaced DIR) before proposing anything. A command of its own, not a
// field of RegisterBroker, so that a node of an older build, which skips
// it, still applies every registration.
type SetBrokerDirectory struct {
	// Broker is the registered broker.
	Broker int32
	// DirectoryID is its DIR's id, 1 to MaxDirectoryIDLen bytes.
	DirectoryID string
}

// CreateTopic creates a topic with its assignment, computed by the
// controller before proposing (NewCreateTopic) so Apply has nothing to
// choose.
type CreateTopic struct {
	// Name is the topic's name.
	Name string
	// ID is the topic id, not all zero and unused by any topic.
	ID [16]byte
	// Configs holds the overrides.
	Configs map[string]string
	// Replicas holds every partition's replicas; every list has the same
	// length (the replication factor), distinct registered brokers.
	Replicas [][]int32
}

// DeleteTopic deletes a topic.
type DeleteTopic struct {
	// Name is the topic's name.
	Name string
}

// AlterTopicConfig changes a topic's overrides: with Replace the
// overrides become exactly Set (AlterConfigs), otherwise Set's entries
// are set and Delete's names removed (IncrementalAlterConfigs). Applied
// to the overrides current at apply time, so two incremental changes
// racing each other both take effect.
type AlterTopicConfig struct {
	// Name is the topic's name.
	Name string
	// Replace makes Set the whole of the overrides.
	Replace bool
	// Set holds the names and values to set.
	Set map[string]string
	// Delete holds the names to remove (back to the default).
	Delete []string
}

// CreatePartitions adds partitions to a topic. From is the partition
// count the controller planned against: Apply refuses the command if the
// topic no longer has From partitions, rather than number the new
// partitions differently from the plan.
type CreatePartitions struct {
	// Name is the topic's name.
	Name string
	// From is the topic's partition count when the command was planned.
	From int32
	// Replicas holds the new partitions' replicas, for partitions From,
	// From+1, ...
	Replicas [][]int32
}

// AllocateProducerIDs hands a block of ProducerIDBlockSize producer ids
// to a registered broker (KIP-730); the result carries the block.
type AllocateProducerIDs struct {
	// Broker is the broker asking.
	Broker int32
}

// SetClusterID names the cluster once: the first controller proposes
// it, and every node records it in its meta.properties, so the cluster
// id clients see is the same on every node and across restarts. Once
// set, only the same id is accepted again.
type SetClusterID struct {
	// ID is the cluster id, 1 to 64 bytes (Kafka's are 22 characters of
	// URL-safe base64).
	ID string
}

func (*RegisterBroker) kind() kind      { return kindRegisterBroker }
func (*CreateTopic) kind() kind         { return kindCreateTopic }
func (*DeleteTopic) kind() kind         { return kindDeleteTopic }
func (*AlterTopicConfig) kind() kind    { return kindAlterTopicConfig }
func (*CreatePartitions) kind() kind    { return kindCreatePartitions }
func (*AllocateProducerIDs) kind() kind { return kindAllocateProducerIDs }
func (*SetClusterID) kind() kind        { return kindSetClusterID }

func (c *RegisterBroker) encodeBody(w *writer) {
	w.varint(int64(c.ID))
	w.str(c.Host)
	w.varint(int64(c.Port))
	w.str(c.RaftAddr)
}

func (*SetBrokerDirectory) kind() kind { return kindSetBrokerDirectory }

func (c *SetBrokerDirectory) encodeBody(w *writer) {
	w.varint(int64(c.Broker))
	w.str(c.DirectoryID)
}

func (c *CreateTopic) encodeBody(w *writer) {
	w.str(c.Name)
	w.b = append(w.b, c.ID[:]...)
	w.strMap(c.Configs)
	writeAssignment(w, c.Replicas)
}

func (c *DeleteTopic) encodeBody(w *writer) { w.str(c.Name) }

func (c *AlterTopicConfig) encodeBody(w *writer) {
	w.str(c.Name)
	w.bool(c.Replace)
	w.strMap(c.Set)
	w.strs(c.Delete)
}

func (c *CreatePartitions) encodeBody(w *writer) {
	w.str(c.Name)
	w.varint(int64(c.From))
	writeAssignment(w, c.Replicas)
}

func (c *AllocateProducerIDs) encodeBody(w *writer) { w.varint(int64(c.Broker)) }

func (c *SetClusterID) encodeBody(w *writer) { w.str(c.ID) }

func writeAssignment(w *writer, a [][]int32) {
	w.uvarint(uint64(len(a)))
	for _, r := range a {
		w.int32s(r)
	}
}

func readAssignment(r *reader) [][]int32 {
	n := r.count(1)
	if r.err != nil || n == 0 {
		return nil
	}
	a := make([][]int32, n)
	for i := range a {
		a[i] = r.int32s()
	}
	return a
}

// Encode returns c's encoding: the type byte, the version byte, then the
// fields. A command larger than MaxCommandBytes is refused with
// ErrBadEncoding.
func Encode(c Command) ([]byte, error) {
	w := &writer{b: make([]byte, 0, 64)}
	w.u8(uint8(c.kind()))
	w.u8(commandVersion)
	c.encodeBody(w)
	if len(w.b) > MaxCommandBytes {
		return nil, fmt.Errorf("%w: command of %d bytes, the limit is %d", ErrBadEncoding, len(w.b), MaxCommandBytes)
	}
	return w.b, nil
}

// Decode parses an encoded command. A type or version this code does not
// know is refused (ErrUnknownCommand, ErrUnsupportedVersion), anything
// malformed with ErrBadEncoding; it never panics, and allocates no more
// than the input's length can account for.
func Decode(b []byte) (Command, error) {
	if len(b) > MaxCommandBytes {
		return nil, fmt.Errorf("%w: command of %d bytes, the limit is %d", ErrBadEncoding, len(b), MaxCommandBytes)
	}
	r := &reader{b: b}
	k, v := kind(r.u8()), r.u8()
	if r.err != nil {
		return nil, r.err
	}
	var c Command
	switch k {
	case kindRegisterBroker:
		c = &RegisterBroker{}
	case kindCreateTopic:
		c = &CreateTopic{}
	case kindDeleteTopic:
		c = &DeleteTopic{}
	case kindAlterTopicConfig:
		c = &AlterTopicConfig{}
	case kindCreatePartitions:
		c = &CreatePartitions{}
	case kindAllocateProducerIDs:
		c = &AllocateProducerIDs{}
	case kindSetClusterID:
		c = &SetClusterID{}
	case kindSetCredential:
		c = &SetCredential{}
	case kindDeleteCredential:
		c = &DeleteCredential{}
	case kindCreateACLs:
		c = &CreateACLs{}
	case kindDeleteACLs:
		c = &DeleteACLs{}
	case kindAlterClientQuotas:
		c = &AlterClientQuotas{}
	case kindSetBrokerDirectory:
		c = &SetBrokerDirectory{}
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownCommand, k)
	}
	if v != commandVersion {
		return nil, fmt.Errorf("%w: %T version %d (this node reads version %d)", ErrUnsupportedVersion, c, v, commandVersion)
	}
	switch c := c.(type) {
	case *RegisterBroker:
		c.ID = r.int32()
		c.Host = r.str()
		c.Port = r.int32()
		c.RaftAddr = r.str()
	case *SetBrokerDirectory:
		c.Broker = r.int32()
		c.DirectoryID = r.str()
	case *CreateTopic:
		c.Name = r.str()
		if len(r.b) < len(c.ID) {
			r.fail("truncated topic id")
		} else if r.err == nil {
			copy(c.ID[:], r.b)
			r.b = r.b[len(c.ID):]
		}
		c.Configs = r.strMap()
		c.Replicas = readAssignment(r)
	case *DeleteTopic:
		c.Name = r.str()
	case *AlterTopicConfig:
		c.Name = r.str()
		c.Replace = r.bool()
		c.Set = r.strMap()
		c.Delete = r.strs()
	case *CreatePartitions:
		c.Name = r.str()
		c.From = r.int32()
		c.Replicas = readAssignment(r)
	case *AllocateProducerIDs:
		c.Broker = r.int32()
	case *SetClusterID:
		c.ID = r.str()
	case *SetCredential:
		decodeSetCredential(r, c)
	case *DeleteCredential:
		decodeDeleteCredential(r, c)
	case interface{ decodeBody(*reader) }: // the ACL commands, AlterClientQuotas
		c.decodeBody(r)
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("%T: %w", c, err)
	}
	return c, nil
}
