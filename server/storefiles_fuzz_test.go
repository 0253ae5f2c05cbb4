package server

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// FuzzStoreFiles feeds arbitrary bytes to the parsers of the small files
// a store's directory holds for the server besides the credentials
// (FuzzSASLInput has those): the ACLs and the client quotas. Nothing may
// panic or allocate what a count claims; a file that decodes must encode
// back to the same bytes, so no entry is misread.
func FuzzStoreFiles(f *testing.F) {
	fsys := vfs.NewMem()
	st, err := loadACLStore(fsys, "/")
	if err != nil {
		f.Fatal(err)
	}
	if err := st.CreateACLs(f.Context(), []acl.ACL{
		{ResourceType: kmsg.ACLResourceTypeTopic, Name: "t", Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
	}); err != nil {
		f.Fatal(err)
	}
	f.Add(vfstest.ReadFile(f, fsys, "/"+ACLFile))
	q, err := LoadQuotas(fsys, "/")
	if err != nil {
		f.Fatal(err)
	}
	if err := q.Alter([]ClientQuotaChange{
		{Entity: QuotaEntity{User: "alice", ClientID: "app"}, Set: map[string]float64{QuotaProducerByteRate: 1 << 20}},
		{Entity: QuotaEntity{DefaultClientID: true}, Set: map[string]float64{QuotaRequestPercentage: 50}},
	}); err != nil {
		f.Fatal(err)
	}
	f.Add(encodeQuotas(q.List()))
	f.Fuzz(func(t *testing.T, b []byte) {
		if list, err := decodeACLFile(b); err == nil && !bytes.Equal(encodeACLFile(list), b) {
			t.Fatalf("decoded %d ACLs that encode differently", len(list))
		}
		if list, err := decodeQuotas(b); err == nil && !bytes.Equal(encodeQuotas(list), b) {
			t.Fatalf("decoded %d quotas that encode differently", len(list))
		}
	})
}
