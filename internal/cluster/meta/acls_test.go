package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
)

func sampleACLs() []acl.ACL {
	return []acl.ACL{
		{ResourceType: kmsg.ACLResourceTypeTopic, Name: "orders", Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		{ResourceType: kmsg.ACLResourceTypeGroup, Name: "g-", Pattern: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:*", Host: "10.0.0.1", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny},
		{ResourceType: kmsg.ACLResourceTypeCluster, Name: acl.ClusterName, Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:carol", Host: "*", Operation: kmsg.ACLOperationAlter, Permission: kmsg.ACLPermissionTypeAllow},
	}
}

func anyFilter() acl.Filter {
	return acl.Filter{ResourceType: kmsg.ACLResourceTypeAny, Pattern: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
}

func TestACLCommandsRoundTrip(t *testing.T) {
	name, host := "orders", "10.0.0.1"
	f := anyFilter()
	f.Name, f.Host = &name, &host
	for _, c := range []Command{&CreateACLs{ACLs: sampleACLs()}, &DeleteACLs{Filters: []acl.Filter{anyFilter(), f}}} {
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != byte(c.kind()) || (b[0] != 10 && b[0] != 11) {
			t.Fatalf("%T is kind %d", c, b[0])
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T: decoded %+v, want %+v", c, got, c)
		}
		for i := range b {
			if _, err := Decode(b[:i]); !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("%T: prefix of %d/%d bytes: %v, want ErrBadEncoding", c, i, len(b), err)
			}
		}
	}
	// A count the bytes cannot hold allocates nothing and is refused.
	if _, err := Decode([]byte{byte(kindCreateACLs), commandVersion, 0xff, 0xff, 0xff, 0xff, 0x0f}); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("a huge count: %v", err)
	}
}

func TestApplyACLs(t *testing.T) {
	s := populated(t)
	all := sampleACLs()
	s1, _, err := s.apply(s.index+1, &CreateACLs{ACLs: all[:2]})
	if err != nil {
		t.Fatal(err)
	}
	// Again, with one more: the existing ones are not doubled.
	s2, _, err := s1.apply(s1.index+1, &CreateACLs{ACLs: all})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ACLs()) != 0 || len(s1.ACLs()) != 2 || len(s2.ACLs()) != 3 {
		t.Fatalf("ACLs %d, %d, %d; want 0, 2, 3 (earlier states unchanged)", len(s.ACLs()), len(s1.ACLs()), len(s2.ACLs()))
	}
	f := anyFilter()
	f.ResourceType = kmsg.ACLResourceTypeGroup
	s3, res, err := s2.apply(s2.index+1, &DeleteACLs{Filters: []acl.Filter{f, anyFilter()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s3.ACLs()) != 0 || len(res.DeletedACLs) != 2 || len(res.DeletedACLs[0]) != 1 || len(res.DeletedACLs[1]) != 2 {
		t.Fatalf("after delete: %v, deleted %v", s3.ACLs(), res.DeletedACLs)
	}
	if len(s2.ACLs()) != 3 {
		t.Fatal("a delete changed the state it applied to")
	}
	bad := all[0]
	bad.Operation = kmsg.ACLOperationAny
	before := EncodeState(s2)
	if _, _, err := s2.apply(s2.index+1, &CreateACLs{ACLs: []acl.ACL{all[2], bad}}); !errors.Is(err, acl.ErrInvalid) {
		t.Errorf("an invalid ACL: %v", err)
	}
	bf := anyFilter()
	bf.Operation = kmsg.ACLOperationUnknown
	if _, _, err := s2.apply(s2.index+1, &DeleteACLs{Filters: []acl.Filter{bf}}); !errors.Is(err, acl.ErrInvalid) {
		t.Errorf("an invalid filter: %v", err)
	}
	if !bytes.Equal(EncodeState(s2), before) {
		t.Error("refused commands changed the state")
	}
}

func TestSnapshotACLs(t *testing.T) {
	s := populated(t)
	s, _, err := s.apply(s.index+1, &CreateACLs{ACLs: sampleACLs()})
	if err != nil {
		t.Fatal(err)
	}
	b := EncodeState(s)
	got, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.ACLs(), s.ACLs()) || !bytes.Equal(EncodeState(got), b) {
		t.Fatalf("round trip: %v, want %v", got.ACLs(), s.ACLs())
	}
	// Two entries swapped: refused, so decode-encode stays the identity.
	enc := EncodeState(populated(t))
	start := len(enc) - emptyACLsSection - emptyQuotasSection - emptyDirectoryIDsSection
	swapped := append([]byte(nil), enc[:start]...)
	swapped = append(swapped, 2)
	swapped = acl.Append(swapped, s.ACLs()[1])
	swapped = acl.Append(swapped, s.ACLs()[0])
	swapped = append(swapped, enc[start+emptyACLsSection:]...)
	if _, err := DecodeState(swapped); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("ACLs out of order: %v", err)
	}
	// A version 2 snapshot (before ACLs) restores with none.
	v2 := asVersion2(EncodeState(populated(t)))
	if got, err := DecodeState(v2); err != nil || len(got.ACLs()) != 0 {
		t.Errorf("version 2: %v %v", got, err)
	}
}
