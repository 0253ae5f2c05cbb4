package sendfile

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"testing"
	"time"
)

// A TLS connection must never take sendfile, which would put plaintext on
// the wire under it: SendFile declines and Copy encrypts by writing.
func TestSendFileDeclinesTLS(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	rawSnd, rawRcv := tcpPair(t)
	cert := selfSignedCert(t)
	snd := tls.Server(rawSnd, &tls.Config{Certificates: []tls.Certificate{cert}})
	rcv := tls.Client(rawRcv, &tls.Config{InsecureSkipVerify: true})
	snd.SetDeadline(deadline())
	rcv.SetDeadline(deadline())

	var s Sender
	if written, handled, err := s.SendFile(snd, src, 0, 10); handled || written != 0 || err != nil {
		t.Fatalf("SendFile to *tls.Conn = %d, %v, %v; want a decline", written, handled, err)
	}
	const off, n = 11, DefaultChunkSize + 13
	got := receive(rcv, n) // the client's first Read drives the handshake
	written, err := s.Copy(snd, src, off, n)
	if err != nil || written != n {
		t.Fatalf("Copy = %d, %v", written, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if st := s.Stats(); st.SendfileCalls != 0 || st.CopyBytes != n {
		t.Fatalf("stats %+v: want no sendfile call and every byte copied", st)
	}
}

func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
