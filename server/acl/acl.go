// Package acl is Kafka's access control lists as seglog serve keeps and
// checks them: the entry (a resource pattern bound to a principal, a
// host, an operation and ALLOW or DENY), the rules of Kafka's
// AclAuthorizer for deciding a request, the filters of DescribeAcls and
// DeleteAcls, and the binary encoding of an entry that both the single
// node's ACL file (server) and the cluster's metadata log (meta) use.
//
// The enumerations are kmsg's, whose values are Kafka's wire codes.
package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The resource names and principals Kafka gives a meaning to.
const (
	// Wildcard is the literal resource name, and the host, matching
	// every one.
	Wildcard = "*"
	// WildcardPrincipal matches every user.
	WildcardPrincipal = "User:*"
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// UserPrefix starts every principal seglog authenticates (SASL's
	// users are Kafka's User principals).
	UserPrefix = "User:"
)

// MaxStringLen bounds a resource name, principal or host: Kafka sets
// none, the bound keeps one entry, the file and a command small.
const MaxStringLen = 1 << 15

// MaxACLs bounds the ACLs a node, or a cluster, keeps: Kafka sets no
// limit and real clusters have hundreds; the bound keeps the file, a
// metadata command and the snapshot small.
const MaxACLs = 100_000

// ErrTooMany refuses a creation that would keep more than MaxACLs. It
// is an ErrInvalid (INVALID_REQUEST).
var ErrTooMany = fmt.Errorf("%w: more than %d ACLs", ErrInvalid, MaxACLs)

// ErrInvalid reports an ACL or filter Kafka would refuse with
// INVALID_REQUEST: an ANY or UNKNOWN where a concrete value is needed, an
// empty or over-long name, a principal that is not TYPE:NAME, a CLUSTER
// resource not named kafka-cluster.
var ErrInvalid = errors.New("acl: invalid")

// ACL is one access control entry bound to a resource pattern, Kafka's
// AclBinding.
type ACL struct {
	// ResourceType is TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID.
	ResourceType kmsg.ACLResourceType
	// Name is the resource name, or its prefix when Pattern is PREFIXED;
	// the literal "*" matches every resource of the type.
	Name string
	// Pattern is LITERAL or PREFIXED.
	Pattern kmsg.ACLResourcePatternType
	// Principal is "User:NAME" or "User:*".
	Principal string
	// Host is a client IP address, or "*" for any.
	Host string
	// Operation is the operation granted or denied; ALL is every one.
	Operation kmsg.ACLOperation
	// Permission is ALLOW or DENY.
	Permission kmsg.ACLPermissionType
}

// String shows the entry as Kafka's kafka-acls.sh does, for logs.
func (a ACL) String() string {
	return fmt.Sprintf("(%s %s %s: %s %s %s from %s)", a.ResourceType, a.Pattern, a.Name,
		a.Principal, a.Permission, a.Operation, a.Host)
}

// Validate reports why Kafka would refuse to create a, or nil (Kafka's
// AclControlManager.validateNewAcl and the CreateAcls handler's checks).
func Validate(a ACL) error {
	switch a.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
		kmsg.ACLResourceTypeTransactionalId:
	default:
		return fmt.Errorf("%w: resource type %s", ErrInvalid, a.ResourceType)
	}
	switch a.Pattern {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return fmt.Errorf("%w: pattern type %s", ErrInvalid, a.Pattern)
	}
	switch a.Operation {
	case kmsg.ACLOperationAny, kmsg.ACLOperationUnknown:
		return fmt.Errorf("%w: operation %s", ErrInvalid, a.Operation)
	}
	if a.Operation < kmsg.ACLOperationAll || a.Operation > kmsg.ACLOperationIdempotentWrite {
		return fmt.Errorf("%w: operation %d", ErrInvalid, a.Operation)
	}
	switch a.Permission {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return fmt.Errorf("%w: permission %s", ErrInvalid, a.Permission)
	}
	if err := checkString("resource name", a.Name); err != nil {
		return err
	}
	if a.ResourceType == kmsg.ACLResourceTypeCluster && a.Name != ClusterName {
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalid, ClusterName)
	}
	if err := checkString("principal", a.Principal); err != nil {
		return err
	}
	if typ, name, ok := strings.Cut(a.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not TYPE:NAME", ErrInvalid, a.Principal)
	}
	return checkString("host", a.Host)
}

func checkString(what, s string) error {
	if s == "" || len(s) > MaxStringLen || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s of %d bytes (1 to %d of UTF-8)", ErrInvalid, what, len(s), MaxStringLen)
	}
	return nil
}

// Compare orders ACLs by resource, then principal, host, operation and
// permission: the order they are stored and listed in, so equal sets
// encode equally.
func Compare(a, b ACL) int {
	switch {
	case a.ResourceType != b.ResourceType:
		return int(a.ResourceType) - int(b.ResourceType)
	case a.Pattern != b.Pattern:
		return int(a.Pattern) - int(b.Pattern)
	}
	if n := strings.Compare(a.Name, b.Name); n != 0 {
		return n
	}
	if n := strings.Compare(a.Principal, b.Principal); n != 0 {
		return n
	}
	if n := strings.Compare(a.Host, b.Host); n != 0 {
		return n
	}
	if a.Operation != b.Operation {
		return int(a.Operation) - int(b.Operation)
	}
	return int(a.Permission) - int(b.Permission)
}

// Request is who asks and from where: the principal ("User:alice") and
// the client's IP address as text.
type Request struct {
	// Principal is "User:" and the SASL user.
	Principal string
	// Host is the client's IP address ("127.0.0.1", "::1").
	Host string
}

// matchesWho reports whether a applies to r's principal and host.
func (a *ACL) matchesWho(r Request) bool {
	return (a.Principal == r.Principal || a.Principal == WildcardPrincipal) &&
		(a.Host == r.Host || a.Host == Wildcard)
}

// matchesResource reports whether a's pattern covers the resource: the
// same literal name, the wildcard, or a prefix of the name.
func (a *ACL) matchesResource(rt kmsg.ACLResourceType, name string) bool {
	if a.ResourceType != rt {
		return false
	}
	if a.Pattern == kmsg.ACLResourcePatternTypePrefixed {
		return strings.HasPrefix(name, a.Name)
	}
	return a.Name == name || a.Name == Wildcard
}

// implied lists the operations an ALLOW for which also allows op: ALL
// always; READ, WRITE, DELETE and ALTER allow DESCRIBE; ALTER_CONFIGS
// allows DESCRIBE_CONFIGS (AclAuthorizer's rules).
func implied(op, granted kmsg.ACLOperation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Allowed decides, by Kafka's AclAuthorizer, whether r may do op on the
// resource: denied if any DENY entry for op (or ALL) matches, else
// allowed if any ALLOW entry for op, ALL or an operation implying op
// matches, else denied (allow.everyone.if.no.acl.found is false).
func Allowed(acls []ACL, r Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	allowed := false
	for i := range acls {
		a := &acls[i]
		if !a.matchesWho(r) || !a.matchesResource(rt, name) {
			continue
		}
		if a.Permission == kmsg.ACLPermissionTypeDeny {
			if a.Operation == op || a.Operation == kmsg.ACLOperationAll {
				return false
			}
			continue
		}
		if implied(op, a.Operation) {
			allowed = true
		}
	}
	return allowed
}

// AllowedAny decides whether r may do op on at least one resource of type
// rt, as Kafka's authorizeByResourceType does (KIP-679: WRITE on any
// topic lets a producer be idempotent). It answers yes when an ALLOW
// entry for op (or ALL) exists that no DENY entry covers whole: a DENY
// of the wildcard covers everything, a literal DENY its name, a prefixed
// DENY every name and prefix it starts.
func AllowedAny(acls []ACL, r Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	var allows, denies []*ACL
	for i := range acls {
		a := &acls[i]
		if a.ResourceType != rt || !a.matchesWho(r) || (a.Operation != op && a.Operation != kmsg.ACLOperationAll) {
			continue
		}
		if a.Permission == kmsg.ACLPermissionTypeDeny {
			if a.Pattern == kmsg.ACLResourcePatternTypeLiteral && a.Name == Wildcard {
				return false
			}
			denies = append(denies, a)
		} else {
			allows = append(allows, a)
		}
	}
	for _, a := range allows {
		if a.Pattern == kmsg.ACLResourcePatternTypeLiteral && a.Name == Wildcard {
			return true
		}
		covered := false
		for _, d := range denies {
			if (d.Pattern == kmsg.ACLResourcePatternTypePrefixed && strings.HasPrefix(a.Name, d.Name)) ||
				(d.Pattern == a.Pattern && d.Name == a.Name) {
				covered = true
				break
			}
		}
		if !covered {
			return true
		}
	}
	return false
}

// Filter selects ACLs, as DescribeAcls and DeleteAcls send it: ANY
// matches every value of a field, an empty Name, Principal or Host every
// one; the MATCH pattern type selects the entries that would apply to
// the resource called Name (literal, wildcard and prefixes).
type Filter struct {
	// ResourceType is a type, or ANY.
	ResourceType kmsg.ACLResourceType
	// Name is the resource name or pattern, nil for any.
	Name *string
	// Pattern is LITERAL, PREFIXED, ANY or MATCH.
	Pattern kmsg.ACLResourcePatternType
	// Principal and Host are nil for any.
	Principal *string
	Host      *string
	// Operation and Permission are a value, or ANY.
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

// ValidateFilter reports a filter with an UNKNOWN field, or nil: Kafka
// answers INVALID_REQUEST for those.
func ValidateFilter(f Filter) error {
	switch {
	case f.ResourceType <= kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeDelegationToken:
		return fmt.Errorf("%w: filter resource type %s", ErrInvalid, f.ResourceType)
	case f.Pattern <= kmsg.ACLResourcePatternTypeUnknown || f.Pattern > kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: filter pattern type %s", ErrInvalid, f.Pattern)
	case f.Operation <= kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationCreateTokens:
		return fmt.Errorf("%w: filter operation %s", ErrInvalid, f.Operation)
	case f.Permission <= kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return fmt.Errorf("%w: filter permission %s", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether f selects a (Kafka's AclBindingFilter.matches).
func (f Filter) Matches(a ACL) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != a.ResourceType {
		return false
	}
	switch f.Pattern {
	case kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch, a.Pattern:
	default:
		return false
	}
	if f.Name != nil {
		if f.Pattern == kmsg.ACLResourcePatternTypeMatch {
			if !a.matchesResource(a.ResourceType, *f.Name) {
				return false
			}
		} else if *f.Name != a.Name {
			return false
		}
	}
	return (f.Principal == nil || *f.Principal == a.Principal) &&
		(f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == a.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == a.Permission)
}

// Merge returns the sorted union of list (sorted by Compare) and add, as
// a new slice: adding an ACL already there is not an error, as in Kafka.
func Merge(list, add []ACL) []ACL {
	next := make([]ACL, 0, len(list)+len(add))
	next = append(append(next, list...), add...)
	slices.SortFunc(next, Compare)
	return slices.CompactFunc(next, func(a, b ACL) bool { return a == b })
}

// Remove returns list without what the filters match, as a new slice,
// and per filter the ACLs it removed (one two filters match counts for
// the first).
func Remove(list []ACL, filters []Filter) ([]ACL, [][]ACL) {
	deleted := make([][]ACL, len(filters))
	next := make([]ACL, 0, len(list))
	for _, a := range list {
		gone := false
		for i, f := range filters {
			if f.Matches(a) {
				deleted[i] = append(deleted[i], a)
				gone = true
				break
			}
		}
		if !gone {
			next = append(next, a)
		}
	}
	return next, deleted
}
