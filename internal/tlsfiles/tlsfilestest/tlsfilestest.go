// Package tlsfilestest makes certificate authorities and certificates in
// PEM files for tests.
package tlsfilestest

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
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority of a test, its certificate in File.
type CA struct {
	File string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var serials atomic.Int64

// NewCA makes a CA named name, its certificate in a PEM file of a folder
// of tb's.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serials.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(tb.TempDir(), name+".pem")
	writePEM(tb, file, "CERTIFICATE", der)
	return &CA{File: file, cert: cert, key: key}
}

// Issue writes a certificate signed by ca for 127.0.0.1, localhost and
// hosts, usable by servers and clients, and its key, into certFile and
// keyFile, and returns its serial number.
func (ca *CA) Issue(tb testing.TB, certFile, keyFile string, hosts ...string) int64 {
	tb.Helper()
	key := newKey(tb)
	serial := serials.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "followgraph test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     append([]string{"localhost"}, hosts...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	writePEM(tb, certFile, "CERTIFICATE", der)
	writePEM(tb, keyFile, "EC PRIVATE KEY", keyDER)
	return serial
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// writePEM replaces file with one PEM block, at once (a rename), so that
// a reader never sees half of it.
func writePEM(tb testing.TB, file, kind string, der []byte) {
	tb.Helper()
	tmp := file + ".new"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		tb.Fatal(err)
	}
}

// Serial returns the serial number of the certificate the TLS server at
// addr presents to a client with cfg, or the handshake's error.
func Serial(addr string, cfg *tls.Config) (int64, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

// WaitSerial waits until the server at addr presents the certificate of
// serial number want to new connections (a renewed one), for at most
// within.
func WaitSerial(tb testing.TB, addr string, cfg *tls.Config, want int64, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := Serial(addr, cfg)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("certificate %d (%v) %v after it was renewed as %d", got, err, within, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Mutual is what a test of mutual TLS needs, in a folder of the test's: a
// CA, a server certificate and a client certificate of it, and a client
// certificate of another CA.
type Mutual struct {
	CA                        *CA
	ServerCert, ServerKey     string
	ClientCert, ClientKey     string
	StrangerCert, StrangerKey string // of another CA
}

// NewMutual makes the certificates of a test of mutual TLS.
func NewMutual(tb testing.TB) Mutual {
	tb.Helper()
	dir := tb.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	m := Mutual{CA: NewCA(tb, "ca"),
		ServerCert: path("server.pem"), ServerKey: path("server.key"),
		ClientCert: path("client.pem"), ClientKey: path("client.key"),
		StrangerCert: path("stranger.pem"), StrangerKey: path("stranger.key")}
	m.CA.Issue(tb, m.ServerCert, m.ServerKey)
	m.CA.Issue(tb, m.ClientCert, m.ClientKey)
	NewCA(tb, "other").Issue(tb, m.StrangerCert, m.StrangerKey)
	return m
}
