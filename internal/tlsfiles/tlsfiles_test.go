package tlsfiles_test

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/followgraph/followgraph/internal/tlsfiles"
	"github.com/followgraph/followgraph/internal/tlsfiles/tlsfilestest"
)

// serveTLS accepts connections on a loopback port with cfg, answering
// each with "ok" after its handshake, until the test ends.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					io.WriteString(c, "ok")
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dial connects with cfg and returns the serial number of the server's
// certificate, or the handshake's error.
func dial(addr string, cfg *tls.Config) (int64, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// With TLS 1.3 a refused client certificate shows at the first read.
	if _, err := io.ReadAll(c); err != nil {
		return 0, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

// TestServer_Reload: a certificate replaced on disk is served from the
// next handshake a second or so later, without a restart; a broken
// replacement keeps the last good one and is reported.
func TestServer_Reload(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := ca.Issue(t, cert, key)
	errs := make(chan error, 10)
	cfg, err := tlsfiles.Server(cert, key, "", func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	client, err := tlsfiles.Client(ca.File, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := dial(addr, client); err != nil || got != first {
		t.Fatalf("first certificate: serial %d, %v; want %d", got, err, first)
	}
	second := ca.Issue(t, cert, key)
	tlsfilestest.WaitSerial(t, addr, client, second, 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		for time.Now().Before(deadline.Add(5 * time.Second)) {
			dial(addr, client)
			select {
			case <-errs:
				goto reported
			default:
				time.Sleep(100 * time.Millisecond)
			}
		}
		t.Fatal("a broken certificate file was not reported")
	}
reported:
	if got, err := dial(addr, client); err != nil || got != second {
		t.Fatalf("after a broken replacement: serial %d, %v; want the last good one, %d", got, err, second)
	}
}

// TestServer_ClientCAs: with client CAs, a client without a certificate,
// or with one of another CA, is refused; one with a certificate of the CA
// is served.
func TestServer_ClientCAs(t *testing.T) {
	m := tlsfilestest.NewMutual(t)
	cfg, err := tlsfiles.Server(m.ServerCert, m.ServerKey, m.CA.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	for _, tt := range []struct {
		name, cert, key string
		ok              bool
	}{
		{"NoCertificate", "", "", false},
		{"OtherCA", m.StrangerCert, m.StrangerKey, false},
		{"TheCA", m.ClientCert, m.ClientKey, true},
	} {
		client, err := tlsfiles.Client(m.CA.File, tt.cert, tt.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dial(addr, client); (err == nil) != tt.ok {
			t.Errorf("%s: handshake error %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestServer_Errors(t *testing.T) {
	if _, err := tlsfiles.Server("", "key.pem", "", nil); err == nil {
		t.Error("no certificate: no error")
	}
	if _, err := tlsfiles.Server(filepath.Join(t.TempDir(), "none.pem"), filepath.Join(t.TempDir(), "none.key"), "", nil); err == nil {
		t.Error("missing files: no error")
	}
}
