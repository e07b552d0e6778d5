// Package tlsfiles makes the TLS configurations of followgraph's servers
// from PEM files: a certificate and its key, reloaded when the files
// change (a renewed certificate needs no restart), and optionally the CAs
// whose client certificates are required (mutual TLS).
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// checkEvery is how often, at most, the files are looked at for a change:
// a handshake then costs one map read, not two stat calls.
const checkEvery = time.Second

// Server returns the TLS configuration of a server with the certificate
// and key of certFile and keyFile, which it reloads at a handshake once
// either file's modification time or size changed (a failed reload keeps
// the last good pair and is reported by onError, if not nil). With
// clientCAs set, clients must present a certificate signed by one of the
// CAs of that PEM file.
func Server(certFile, keyFile, clientCAs string, onError func(error)) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tls: a certificate and its key are both needed")
	}
	k := &keyPair{certFile: certFile, keyFile: keyFile, onError: onError}
	if err := k.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: k.get,
		NextProtos:     []string{"http/1.1"},
	}
	if clientCAs != "" {
		pool, err := certPool(clientCAs)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Client returns the TLS configuration of a client that trusts the CAs of
// the PEM file rootCAs (the system's when empty) and presents the
// certificate and key of certFile and keyFile when both are set.
func Client(rootCAs, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if rootCAs != "" {
		pool, err := certPool(rootCAs)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: %s holds no PEM certificate", file)
	}
	return pool, nil
}

// keyPair is a certificate and key reloaded when their files change.
type keyPair struct {
	certFile, keyFile string
	onError           func(error)

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp // of the files the certificate was loaded from
	checked time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(file string) (fileStamp, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// load reads the pair; the caller holds mu, or has the only reference.
func (k *keyPair) load() error {
	var stamp [2]fileStamp
	var err error
	for i, f := range []string{k.certFile, k.keyFile} {
		if stamp[i], err = stampOf(f); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
	}
	pair, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	k.cert, k.stamp = &pair, stamp
	return nil
}

func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := time.Now(); now.Sub(k.checked) >= checkEvery {
		k.checked = now
		c, err1 := stampOf(k.certFile)
		key, err2 := stampOf(k.keyFile)
		if err1 == nil && err2 == nil && (c != k.stamp[0] || key != k.stamp[1]) {
			if err := k.load(); err != nil && k.onError != nil {
				k.onError(err)
			}
		}
	}
	return k.cert, nil
}
