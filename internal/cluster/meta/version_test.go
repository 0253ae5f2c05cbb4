package meta

// The sections version 3 of the snapshot added after the cluster id, as
// an empty State encodes them: the credentials (the in-force flag and a
// count), then the ACLs (a count), then the client quotas (a count);
// and the one version 4 added after them, the directory ids (a count),
// counted in emptyV3Sections since it follows them. Tests that make an
// older snapshot out of a new one cut these bytes.
const (
	emptyCredentialsSection  = 2
	emptyACLsSection         = 1
	emptyQuotasSection       = 1
	emptyDirectoryIDsSection = 1
	emptyV3Sections          = emptyCredentialsSection + emptyACLsSection + emptyQuotasSection + emptyDirectoryIDsSection
)

// asVersion2 turns the encoding of a State with nothing in version 3's
// sections into the version 2 snapshot of the same State.
func asVersion2(b []byte) []byte {
	b[len(snapshotMagic)] = 2
	return b[:len(b)-emptyV3Sections]
}
