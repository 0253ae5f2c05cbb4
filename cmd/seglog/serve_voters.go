package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// parseVoters parses serve's --voters: a comma-separated list of
// ID@HOST:PORT, every voter of the cluster (this node included) with its
// raft address. Every node is given the same list; the ids are the broker
// ids clients see, so they must be positive (raft reserves 0) and unique,
// and two voters may not share an address.
func parseVoters(s string) (map[int32]string, error) {
	voters := map[int32]string{}
	addrs := map[string]int32{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		idText, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("voter %q: want ID@HOST:PORT", item)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 1 {
			return nil, fmt.Errorf("voter %q: the id must be a number from 1 to %d", item, int32(^uint32(0)>>1))
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("voter %q: %v", item, err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("voter %q: the port must be 1 to 65535 (the raft port other nodes dial)", item)
		}
		if host == "" {
			return nil, fmt.Errorf("voter %q: no host (other nodes dial this address)", item)
		}
		if _, dup := voters[int32(id)]; dup {
			return nil, fmt.Errorf("voter id %d appears twice", id)
		}
		if other, dup := addrs[addr]; dup {
			return nil, fmt.Errorf("voters %d and %d have the same address %s", other, id, addr)
		}
		voters[int32(id)] = addr
		addrs[addr] = int32(id)
	}
	return voters, nil
}

// checkClusterFlags checks serve's cluster flags against each other: the
// node is one of the voters, it listens for raft on its voter address's
// port (peers dial that one; port 0 cannot be announced), and the
// replication factor fits the voters.
func checkClusterFlags(voters map[int32]string, nodeID int32, raftListen string, defaultRF int) error {
	self, ok := voters[nodeID]
	if !ok {
		return fmt.Errorf("--node-id %d is not among --voters", nodeID)
	}
	_, lport, err := net.SplitHostPort(raftListen)
	if err != nil {
		return fmt.Errorf("invalid --raft-listen %q: want HOST:PORT: %v", raftListen, err)
	}
	_, vport, _ := net.SplitHostPort(self)
	if lport != vport {
		return fmt.Errorf("--raft-listen %s: port %s is not this node's port in --voters (%d@%s), which the other nodes dial", raftListen, lport, nodeID, self)
	}
	if defaultRF < 0 || defaultRF > len(voters) {
		return fmt.Errorf("--default-replication-factor %d: must be 1 to the number of voters (%d)", defaultRF, len(voters))
	}
	return nil
}
