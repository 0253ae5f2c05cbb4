package acl

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func allow(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, who string, op kmsg.ACLOperation) ACL {
	return ACL{ResourceType: rt, Name: name, Pattern: pt, Principal: who, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func deny(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, who string, op kmsg.ACLOperation) ACL {
	a := allow(rt, pt, name, who, op)
	a.Permission = kmsg.ACLPermissionTypeDeny
	return a
}

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
)

var alice = Request{Principal: "User:alice", Host: "10.0.0.1"}

func TestAllowed(t *testing.T) {
	for _, c := range []struct {
		name string
		acls []ACL
		op   kmsg.ACLOperation
		res  string
		want bool
	}{
		{"no acl denies", nil, kmsg.ACLOperationRead, "t", false},
		{"literal allow", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "t", true},
		{"other topic", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "u", false},
		{"other op", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationWrite, "t", false},
		{"other user", []ACL{allow(topic, literal, "t", "User:bob", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "t", false},
		{"wildcard user", []ACL{allow(topic, literal, "t", "User:*", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "t", true},
		{"wildcard name", []ACL{allow(topic, literal, "*", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "any", true},
		{"prefixed", []ACL{allow(topic, prefix, "orders-", "User:alice", kmsg.ACLOperationWrite)}, kmsg.ACLOperationWrite, "orders-eu", true},
		{"prefixed miss", []ACL{allow(topic, prefix, "orders-", "User:alice", kmsg.ACLOperationWrite)}, kmsg.ACLOperationWrite, "order", false},
		{"all allows every op", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationAll)}, kmsg.ACLOperationDelete, "t", true},
		{"read implies describe", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationDescribe, "t", true},
		{"alter implies describe", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationAlter)}, kmsg.ACLOperationDescribe, "t", true},
		{"describe implies nothing", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationDescribe)}, kmsg.ACLOperationRead, "t", false},
		{"alter_configs implies describe_configs", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationAlterConfigs)}, kmsg.ACLOperationDescribeConfigs, "t", true},
		{"deny beats allow", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead), deny(topic, prefix, "t", "User:*", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "t", false},
		{"deny all beats allow", []ACL{allow(topic, literal, "*", "User:alice", kmsg.ACLOperationWrite), deny(topic, literal, "t", "User:alice", kmsg.ACLOperationAll)}, kmsg.ACLOperationWrite, "t", false},
		{"deny read leaves describe", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationWrite), deny(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationDescribe, "t", true},
		{"group acl is not a topic's", []ACL{allow(group, literal, "t", "User:alice", kmsg.ACLOperationRead)}, kmsg.ACLOperationRead, "t", false},
	} {
		if got := Allowed(c.acls, alice, c.op, topic, c.res); got != c.want {
			t.Errorf("%s: Allowed = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAllowedHost(t *testing.T) {
	a := allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)
	a.Host = "10.0.0.1"
	if !Allowed([]ACL{a}, alice, kmsg.ACLOperationRead, topic, "t") {
		t.Error("the host's own address is refused")
	}
	if Allowed([]ACL{a}, Request{Principal: "User:alice", Host: "10.0.0.2"}, kmsg.ACLOperationRead, topic, "t") {
		t.Error("another host is allowed")
	}
	d := deny(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)
	d.Host = "10.0.0.2"
	if !Allowed([]ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead), d}, alice, kmsg.ACLOperationRead, topic, "t") {
		t.Error("a DENY for another host applies")
	}
}

func TestAllowedAny(t *testing.T) {
	w := kmsg.ACLOperationWrite
	for _, c := range []struct {
		name string
		acls []ACL
		want bool
	}{
		{"none", nil, false},
		{"one literal", []ACL{allow(topic, literal, "t", "User:alice", w)}, true},
		{"literal denied", []ACL{allow(topic, literal, "t", "User:alice", w), deny(topic, literal, "t", "User:alice", w)}, false},
		{"prefix denied by shorter prefix", []ACL{allow(topic, prefix, "ab", "User:alice", w), deny(topic, prefix, "a", "User:*", w)}, false},
		{"prefix not covered by longer deny", []ACL{allow(topic, prefix, "a", "User:alice", w), deny(topic, prefix, "ab", "User:*", w)}, true},
		{"deny wildcard", []ACL{allow(topic, literal, "t", "User:alice", w), deny(topic, literal, "*", "User:alice", w)}, false},
		{"read is not write", []ACL{allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)}, false},
	} {
		if got := AllowedAny(c.acls, alice, w, topic); got != c.want {
			t.Errorf("%s: AllowedAny = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFilter(t *testing.T) {
	lit := allow(topic, literal, "orders", "User:alice", kmsg.ACLOperationRead)
	pre := allow(topic, prefix, "ord", "User:bob", kmsg.ACLOperationWrite)
	wild := allow(topic, literal, "*", "User:bob", kmsg.ACLOperationWrite)
	grp := allow(group, literal, "orders", "User:alice", kmsg.ACLOperationRead)
	name := func(s string) *string { return &s }
	anyF := Filter{ResourceType: kmsg.ACLResourceTypeAny, Pattern: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	for _, c := range []struct {
		name string
		f    func(f *Filter)
		want []bool // lit, pre, wild, grp
	}{
		{"any", func(*Filter) {}, []bool{true, true, true, true}},
		{"topic", func(f *Filter) { f.ResourceType = topic }, []bool{true, true, true, false}},
		{"any pattern, exact name", func(f *Filter) { f.Name = name("orders") }, []bool{true, false, false, true}},
		{"prefixed only", func(f *Filter) { f.Pattern = prefix }, []bool{false, true, false, false}},
		{"match", func(f *Filter) {
			f.Pattern = kmsg.ACLResourcePatternTypeMatch
			f.Name = name("orders")
			f.ResourceType = topic
		},
			[]bool{true, true, true, false}},
		{"match other", func(f *Filter) { f.Pattern = kmsg.ACLResourcePatternTypeMatch; f.Name = name("x") }, []bool{false, false, true, false}},
		{"principal", func(f *Filter) { f.Principal = name("User:bob") }, []bool{false, true, true, false}},
		{"host", func(f *Filter) { f.Host = name("10.0.0.1") }, []bool{false, false, false, false}},
		{"operation", func(f *Filter) { f.Operation = kmsg.ACLOperationRead }, []bool{true, false, false, true}},
		{"permission", func(f *Filter) { f.Permission = kmsg.ACLPermissionTypeDeny }, []bool{false, false, false, false}},
	} {
		f := anyF
		c.f(&f)
		if err := ValidateFilter(f); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i, a := range []ACL{lit, pre, wild, grp} {
			if got := f.Matches(a); got != c.want[i] {
				t.Errorf("%s: Matches(%v) = %v, want %v", c.name, a, got, c.want[i])
			}
		}
	}
	bad := anyF
	bad.Operation = kmsg.ACLOperationUnknown
	if err := ValidateFilter(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("UNKNOWN operation filter: %v", err)
	}
}

func TestValidate(t *testing.T) {
	good := allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead)
	if err := Validate(good); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(a *ACL){
		"any resource":       func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeAny },
		"match pattern":      func(a *ACL) { a.Pattern = kmsg.ACLResourcePatternTypeMatch },
		"any operation":      func(a *ACL) { a.Operation = kmsg.ACLOperationAny },
		"any permission":     func(a *ACL) { a.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":         func(a *ACL) { a.Name = "" },
		"cluster name":       func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeCluster },
		"principal no colon": func(a *ACL) { a.Principal = "alice" },
		"empty host":         func(a *ACL) { a.Host = "" },
	} {
		a := good
		f(&a)
		if err := Validate(a); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

func TestCodec(t *testing.T) {
	in := []ACL{
		allow(topic, literal, "t", "User:alice", kmsg.ACLOperationRead),
		deny(kmsg.ACLResourceTypeCluster, literal, ClusterName, "User:*", kmsg.ACLOperationAlter),
		allow(kmsg.ACLResourceTypeTransactionalId, prefix, "tx-", "User:bob", kmsg.ACLOperationWrite),
	}
	var b []byte
	for _, a := range in {
		b = Append(b, a)
	}
	rest := b
	for i, want := range in {
		var got ACL
		var err error
		got, rest, err = Decode(rest)
		if err != nil || got != want {
			t.Fatalf("entry %d: %v, %v; want %v", i, got, err, want)
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left", len(rest))
	}
	one := Append(nil, in[0])
	for n := range len(one) {
		if _, _, err := Decode(one[:n]); err == nil {
			t.Errorf("a %d-byte prefix decodes", n)
		}
	}
	huge := append([]byte{1, 3, 3, 3}, 0xff, 0xff, 0xff, 0xff, 0x0f)
	var de *DecodeError
	if _, _, err := Decode(huge); !errors.As(err, &de) || de.Offset != 4 {
		t.Errorf("a huge length: %v", err)
	}
	invalid := Append(nil, ACL{ResourceType: kmsg.ACLResourceTypeAny, Name: "t", Pattern: literal, Principal: "User:a", Host: "*",
		Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow})
	if _, _, err := Decode(invalid); !errors.As(err, &de) {
		t.Errorf("an invalid entry decodes: %v", err)
	}
}

func TestMergeRemove(t *testing.T) {
	a := allow(topic, literal, "a", "User:x", kmsg.ACLOperationRead)
	b := allow(topic, literal, "b", "User:x", kmsg.ACLOperationRead)
	c := deny(group, prefix, "c", "User:*", kmsg.ACLOperationAll)
	list := Merge(nil, []ACL{c, a, a})
	list = Merge(list, []ACL{b, a})
	if len(list) != 3 || list[0] != a || list[1] != b || list[2] != c {
		t.Fatalf("Merge: %v", list)
	}
	f := Filter{ResourceType: topic, Pattern: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	next, deleted := Remove(list, []Filter{f, f})
	if len(next) != 1 || next[0] != c || len(deleted) != 2 || len(deleted[0]) != 2 || len(deleted[1]) != 0 {
		t.Fatalf("Remove: %v, %v", next, deleted)
	}
	if len(list) != 3 {
		t.Fatal("Remove changed its input")
	}
}
