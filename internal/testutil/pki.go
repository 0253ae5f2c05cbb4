package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// PKI is a certificate authority with a server certificate for 127.0.0.1
// and a client certificate, made for one test so that no key is ever
// committed. The fields are PEM.
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey []byte

	pool *x509.CertPool
}

// NewPKI makes a CA and the two certificates it signs, valid for an hour.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	caKey, caCert, caPEM := makeCert(t, "seglog test CA", nil, nil, true)
	serverCert, serverKey := makeLeaf(t, "127.0.0.1", caCert, caKey, x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := makeLeaf(t, "client", caCert, caKey, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &PKI{CA: caPEM, ServerCert: serverCert, ServerKey: serverKey,
		ClientCert: clientCert, ClientKey: clientKey, pool: pool}
}

// ClientTLS is a client's configuration trusting the CA, presenting the
// client certificate when withCert is set.
func (p *PKI) ClientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}
	if withCert {
		cert, err := tls.X509KeyPair(p.ClientCert, p.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func makeLeaf(t testing.TB, cn string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	key, _, certPEM := makeCert(t, cn, ca, caKey, false, usage)
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func makeCert(t testing.TB, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool, usage ...x509.ExtKeyUsage) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           usage,
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(cn); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
