package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Serving beyond loopback (issue 23): HTTPS with --tls-cert and --tls-key,
// plain HTTP on a non-loopback address only with --insecure-plaintext.

// testCert writes a self-signed certificate for 127.0.0.1 and localhost
// and its key into dir, and returns their files and a client trusting it.
func testCert(t *testing.T, dir string) (certFile, keyFile string, client *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "memoryd test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	return certFile, keyFile, client
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

var httpsLine = regexp.MustCompile(`^listening on (https://127\.0\.0\.1:[0-9]+)$`)

// TestServeTLS: with --tls-cert and --tls-key (or MEMORYD_TLS_CERT and
// MEMORYD_TLS_KEY) serve speaks HTTPS on loopback: a client trusting the
// certificate gets 200 with the token and 401 without; the Host check
// stays on; plain HTTP, a client that does not trust the certificate and
// TLS below 1.2 get nothing.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, client := testCert(t, dir)
	for i, how := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"--tls-cert", certFile, "--tls-key", keyFile}},
		{env: map[string]string{"MEMORYD_TLS_CERT": certFile, "MEMORYD_TLS_KEY": keyFile}},
	} {
		vars := map[string]string{"MEMORYD_TOKEN": "tls-token"}
		for k, v := range how.env {
			vars[k] = v
		}
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "m"+string(rune('0'+i))+".db")}, how.args...)
		s := startRunWith(t, args, env(vars), httpsLine, client)

		if st := s.call(t, "tls-token", "GET", "/v1/tools", "", nil); st != http.StatusOK {
			t.Errorf("%v: an authorized call over HTTPS got %d, want 200", how, st)
		}
		if st := s.call(t, "", "GET", "/v1/tools", "", nil); st != http.StatusUnauthorized {
			t.Errorf("%v: a call without the token over HTTPS got %d, want 401", how, st)
		}
		req, err := http.NewRequest("GET", s.url+"/v1/tools", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tls-token")
		req.Host = "attacker.example"
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v: a foreign Host over HTTPS on loopback got %d, want 403 (the Host check stays on)", how, resp.StatusCode)
		}
		if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 || resp.Proto != "HTTP/1.1" {
			t.Errorf("%v: the answer came over %v, %s; want TLS 1.2 or later, HTTP/1.1", how, resp.TLS, resp.Proto)
		}

		// Plain HTTP to the TLS port gets no answer from memoryd (Go's
		// TLS server answers 400 to a plain request, and nothing else).
		plain := strings.Replace(s.url, "https://", "http://", 1) + "/v1/tools"
		req, err = http.NewRequest("GET", plain, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tls-token")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "notes_read_file") {
				t.Errorf("%v: plain HTTP to the TLS port got %d %q, want no answer of memoryd", how, resp.StatusCode, body)
			}
		}
		// A client that does not trust the certificate, and TLS 1.1.
		if _, err := http.Get(s.url + "/healthz"); err == nil {
			t.Errorf("%v: a client without the certificate connected", how)
		}
		old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: client.Transport.(*http.Transport).TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
		if _, err := old.Get(s.url + "/healthz"); err == nil {
			t.Errorf("%v: a TLS 1.1 client connected", how)
		}
		if err := s.stop(t); err != nil {
			t.Fatalf("%v: serve: %v", how, err)
		}
	}
}

// TestServeBeyondLoopback: a non-loopback address serves HTTPS with a
// certificate, or plain HTTP with --insecure-plaintext (both with the Host
// check off and the token required); without either it is refused (the
// usage errors: TestUsageExitsTwo).
func TestServeBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, client := testCert(t, dir)
	for _, tc := range []struct {
		name   string
		flags  []string
		line   string
		client *http.Client
		warn   string
	}{
		{"tls", []string{"--tls-cert", certFile, "--tls-key", keyFile}, `^listening on (https://(?:0\.0\.0\.0|\[::\]):[0-9]+)$`, client, "non-loopback address (HTTPS)"},
		{"insecure-plaintext", []string{"--insecure-plaintext"}, `^listening on (http://(?:0\.0\.0\.0|\[::\]):[0-9]+)$`, http.DefaultClient, "in plain HTTP (--insecure-plaintext)"},
	} {
		args := append([]string{"serve", "--addr", "0.0.0.0:0", "--db", filepath.Join(dir, tc.name+".db")}, tc.flags...)
		s := startRunWith(t, args, env(map[string]string{"MEMORYD_TOKEN": "far-token"}), regexp.MustCompile(tc.line), tc.client)
		req, err := http.NewRequest("GET", s.url+"/v1/tools", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer far-token")
		req.Host = "memoryd.example"
		resp, err := tc.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: a call with the token and another Host got %d, want 200 (the Host check is off beyond loopback)", tc.name, resp.StatusCode)
		}
		if st := s.call(t, "", "GET", "/v1/tools", "", nil); st != http.StatusUnauthorized {
			t.Errorf("%s: a call without the token got %d, want 401", tc.name, st)
		}
		if err := s.stop(t); err != nil {
			t.Fatalf("%s: serve: %v", tc.name, err)
		}
		if !strings.Contains(s.stderr.String(), tc.warn) {
			t.Errorf("%s: no warning %q in the log:\n%s", tc.name, tc.warn, s.stderr.String())
		}
	}
}

// TestServeTLSFileErrors: a certificate or key memoryd cannot use stops
// serve at once (exit 1) with a message naming the file, before anything
// is created or listens.
func TestServeTLSFileErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testCert(t, filepath.Join(dir))
	otherDir := filepath.Join(dir, "other")
	if err := os.Mkdir(otherDir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := testCert(t, otherDir)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable.pem")
	if err := os.Mkdir(unreadable, 0o700); err != nil { // a folder: unreadable as a file, even by root
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	work := t.TempDir()
	for _, tc := range []struct {
		cert, key string
		want      []string
	}{
		{missing, keyFile, []string{"--tls-cert", missing}},
		{certFile, missing, []string{"--tls-key", missing}},
		{unreadable, keyFile, []string{"--tls-cert", unreadable}},
		{certFile, otherKey, []string{"--tls-cert " + certFile, "--tls-key " + otherKey, "private key does not match public key"}},
		{garbage, keyFile, []string{"--tls-cert " + garbage, "certificate"}},
		{certFile, garbage, []string{"--tls-key " + garbage, "key"}},
		{keyFile, certFile, []string{"--tls-cert " + keyFile, "--tls-key " + certFile}},
	} {
		db := filepath.Join(work, "data", "m.db")
		_, stderr, err := fxRun(t, nil, "serve", "--addr", "127.0.0.1:0", "--db", db, "--tls-cert", tc.cert, "--tls-key", tc.key)
		var ue *usageError
		if err == nil || errors.As(err, &ue) || exitCode(err) != 1 {
			t.Errorf("--tls-cert %s --tls-key %s: %v (exit %d), want a failure (exit 1)", tc.cert, tc.key, err, exitCode(err))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("--tls-cert %s --tls-key %s: %q does not say %q", tc.cert, tc.key, err, w)
			}
		}
		if stderr != "" {
			t.Errorf("stderr %q", stderr)
		}
	}
	if entries, err := os.ReadDir(work); err != nil || len(entries) != 0 {
		t.Errorf("refused TLS files left %v (%v) behind", entries, err)
	}
}
