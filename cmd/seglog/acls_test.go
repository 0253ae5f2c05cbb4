package main

import (
	"encoding/binary"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/server/acl"
)

// seglog acls list shows a store's ACLs and writes nothing; a damaged
// file is an error naming it and the byte.
func TestACLsList(t *testing.T) {
	dir := t.TempDir()
	mustInvoke(t, "", "users", "add", dir, "alice", "--password", "pw")
	if r := mustInvoke(t, "", "acls", "list", dir); strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("no ACLs: %q, want the header alone", r.stdout)
	}
	// The file as the server writes it (server/acl_store.go's layout).
	a := acl.ACL{ResourceType: kmsg.ACLResourceTypeTopic, Name: "orders", Pattern: kmsg.ACLResourcePatternTypePrefixed,
		Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow}
	b := binary.BigEndian.AppendUint32([]byte("SGAC\x00\x01"), 1)
	b = acl.Append(b, a)
	b = binary.BigEndian.AppendUint32(b, crc32c.Checksum(b))
	name := filepath.Join(dir, server.ACLFile)
	writeVFS(t, name, b)
	before := dirSnapshot(t, dir)
	r := mustInvoke(t, "", "acls", dir, "list")
	if !strings.Contains(r.stdout, "TOPIC") || !strings.Contains(r.stdout, "orders") || !strings.Contains(r.stdout, "PREFIXED") ||
		!strings.Contains(r.stdout, "User:bob") || !strings.Contains(r.stdout, "WRITE") || !strings.Contains(r.stdout, "ALLOW") {
		t.Errorf("list: %q", r.stdout)
	}
	if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("acls list changed %s", dir)
	}
	b[len(b)-1] ^= 1
	writeVFS(t, name, b)
	before = dirSnapshot(t, dir)
	if r := invoke(t, "", "acls", "list", dir); r.code == 0 || !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "at byte") {
		t.Errorf("a damaged file: exit %d, stderr %q", r.code, r.stderr)
	}
	if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("acls list changed %s", dir)
	}
}
