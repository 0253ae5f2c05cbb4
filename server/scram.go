package server

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SASL mechanisms (Kafka's names).
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Mechanisms lists the SASL mechanisms the server speaks.
var Mechanisms = []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512}

// MinIterations is the fewest PBKDF2 iterations a credential may have,
// Kafka's minimum for SCRAM (KIP-554); MaxIterations its most.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// mechanismHash is the hash a mechanism's credential is derived with. A
// PLAIN credential is derived as SCRAM-SHA-256's is, so that the file
// never holds a password, only what a salted hash of it proves.
func mechanismHash(mech string) (func() hash.Hash, bool) {
	switch mech {
	case MechanismPlain, MechanismSCRAMSHA256:
		return sha256.New, true
	case MechanismSCRAMSHA512:
		return sha512.New, true
	}
	return nil, false
}

func hmacSum(h func() hash.Hash, key []byte, msg ...[]byte) []byte {
	m := hmac.New(h, key)
	for _, b := range msg {
		m.Write(b)
	}
	return m.Sum(nil)
}

func hashSum(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// scramKeys derives RFC 5802's StoredKey and ServerKey from a salted
// password: what a server keeps instead of the password.
func scramKeys(h func() hash.Hash, salted []byte) (stored, server []byte) {
	return hashSum(h, hmacSum(h, salted, []byte("Client Key"))), hmacSum(h, salted, []byte("Server Key"))
}

// saltPassword is RFC 5802's Hi(): PBKDF2 with HMAC of the mechanism's
// hash.
func saltPassword(h func() hash.Hash, password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// newSalt is a fresh random salt.
func newSalt() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// checkPassword says whether password is the one cred was made from.
func checkPassword(cred Credential, password string) bool {
	h, ok := mechanismHash(cred.Mechanism)
	if !ok {
		return false
	}
	salted, err := saltPassword(h, password, cred.Salt, cred.Iterations)
	if err != nil {
		return false
	}
	stored, _ := scramKeys(h, salted)
	return subtle.ConstantTimeCompare(stored, cred.StoredKey) == 1
}

// parsePlain splits a PLAIN message (RFC 4616): authzid NUL authcid NUL
// password. An authorization id other than the user is refused, as
// Kafka does.
func parsePlain(msg []byte) (user, password string, err error) {
	parts := strings.SplitN(string(msg), "\x00", 3)
	if len(parts) != 3 || parts[1] == "" {
		return "", "", errors.New("malformed PLAIN message")
	}
	if parts[0] != "" && parts[0] != parts[1] {
		return "", "", errors.New("PLAIN authorization id is not the user")
	}
	return parts[1], parts[2], nil
}

// scramExchange is the server's side of one SCRAM exchange (RFC 5802):
// the client's first message, then its final one.
type scramExchange struct {
	mech   string
	lookup func(user string) (Credential, bool)

	user        string
	cred        Credential
	gs2         string // the client's GS2 header, which c= must repeat
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce
}

// errSCRAM is a refused SCRAM message or proof; the client is told no
// more than that its credentials were not accepted.
type errSCRAM struct{ reason string }

func (e *errSCRAM) Error() string { return "scram: " + e.reason }

// first answers client-first-message with server-first-message.
func (x *scramExchange) first(msg []byte) ([]byte, error) {
	s := string(msg)
	// gs2-header: "n," or "y," (no channel binding), then an optional
	// authzid, then ",".
	if !strings.HasPrefix(s, "n,") && !strings.HasPrefix(s, "y,") {
		return nil, &errSCRAM{"channel binding is not supported"}
	}
	i := strings.IndexByte(s[2:], ',')
	if i < 0 {
		return nil, &errSCRAM{"malformed client-first-message"}
	}
	authzid := s[2 : 2+i]
	x.gs2 = s[:2+i+1]
	bare := s[len(x.gs2):]
	attrs := strings.Split(bare, ",")
	if len(attrs) > 0 && strings.HasPrefix(attrs[0], "m=") {
		return nil, &errSCRAM{"mandatory extensions are not supported"}
	}
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return nil, &errSCRAM{"malformed client-first-message"}
	}
	user, ok := unescapeSASLName(attrs[0][2:])
	if !ok || user == "" {
		return nil, &errSCRAM{"malformed user name"}
	}
	if authzid != "" {
		if z, ok := strings.CutPrefix(authzid, "a="); !ok || z != attrs[0][2:] {
			return nil, &errSCRAM{"authorization id is not the user"}
		}
	}
	for _, c := range attrs[1][2:] {
		if c < 0x21 || c > 0x7e || c == ',' {
			return nil, &errSCRAM{"malformed nonce"}
		}
	}
	cred, ok := x.lookup(user)
	if !ok {
		return nil, &errSCRAM{"unknown user"}
	}
	x.user, x.cred, x.clientFirst = user, cred, bare
	x.nonce = attrs[1][2:] + base64.RawStdEncoding.EncodeToString(newSalt()[:18])
	x.serverFirst = "r=" + x.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(x.serverFirst), nil
}

// final checks client-final-message's proof and answers with
// server-final-message, which proves the server knew the credential.
func (x *scramExchange) final(msg []byte) ([]byte, error) {
	s := string(msg)
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return nil, &errSCRAM{"client-final-message has no proof"}
	}
	withoutProof, proof64 := s[:i], s[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(x.gs2)) {
		return nil, &errSCRAM{"channel binding does not match the client's first message"}
	}
	// The nonce must end with the server's (client's and server's
	// parts): librdkafka sends its own part again in front, and Kafka
	// accepts that (ScramSaslServer checks endsWith), so seglog does too.
	// The proof covers the message as sent either way.
	if !strings.HasPrefix(attrs[1], "r=") || !strings.HasSuffix(attrs[1], x.nonce) {
		return nil, &errSCRAM{"nonce does not match"}
	}
	h, _ := mechanismHash(x.mech)
	proof, err := base64.StdEncoding.DecodeString(proof64)
	if err != nil || len(proof) != h().Size() {
		return nil, &errSCRAM{"malformed proof"}
	}
	authMessage := []byte(x.clientFirst + "," + x.serverFirst + "," + withoutProof)
	signature := hmacSum(h, x.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	if subtle.ConstantTimeCompare(hashSum(h, clientKey), x.cred.StoredKey) != 1 {
		return nil, &errSCRAM{"wrong password"}
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacSum(h, x.cred.ServerKey, authMessage))), nil
}

// unescapeSASLName undoes RFC 5802's "=2C" and "=3D"; any other "=" is
// malformed.
func unescapeSASLName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// mechanismCode is DescribeUserScramCredentials' number for a SCRAM
// mechanism (0 for others).
func mechanismCode(mech string) int8 {
	switch mech {
	case MechanismSCRAMSHA256:
		return 1
	case MechanismSCRAMSHA512:
		return 2
	}
	return 0
}

func mechanismOfCode(code int8) (string, error) {
	switch code {
	case 1:
		return MechanismSCRAMSHA256, nil
	case 2:
		return MechanismSCRAMSHA512, nil
	}
	return "", fmt.Errorf("unknown SCRAM mechanism %d", code)
}
