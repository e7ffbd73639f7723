package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServeRefusesAnUnreadableTLSCertificateAsBadInputBeforeListening(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"serve", "-listen", "127.0.0.1:0", "-tls-cert", missing, "-tls-key", missing}, &out, &errOut)
	require.Equal(t, 2, code, "a certificate that cannot be read is bad input: %s", errOut.String())
	require.Empty(t, out.String(), "serve says it listens only once it accepts requests")
	require.Contains(t, errOut.String(), "missing.pem")
}

func TestServeWithTLSAnswersOverHTTPSAndStopsWithZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))

	srvCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() {
		done <- run(srvCtx, []string{"serve", "-listen", "127.0.0.1:0", "-tls-cert", certPath, "-tls-key", keyPath}, pw, &errOut)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, line)
	require.True(t, strings.HasPrefix(url, "https://"), url)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(url + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stop()
	require.Equal(t, 0, <-done, errOut.String())
}

func TestServeWithAuthRefusesMetricsWithoutAKnownToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	auth := filepath.Join(t.TempDir(), "auth.json")
	require.NoError(t, os.WriteFile(auth, []byte(`{"tokens": [{"token": "t-mon", "principal": "prometheus"}]}`), 0o600))
	srvCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() {
		done <- run(srvCtx, []string{"serve", "-listen", "127.0.0.1:0", "-auth", auth}, pw, &errOut)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	url := strings.TrimPrefix(strings.TrimSpace(line), "listening on ")
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	for token, want := range map[string]int{"": http.StatusUnauthorized, "t-wrong": http.StatusUnauthorized, "t-mon": http.StatusOK} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "token %q", token)
	}
	resp, err := http.Get(url + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "probes need no token")
	stop()
	require.Equal(t, 0, <-done, errOut.String())
}

// TestServeRefusesABadLeaderTTLForwardTimeoutOrAdvertiseURLAsBadInput:
// -leader-ttl and -forward-timeout must be positive, -advertise an
// http(s) URL, given when -db listens on an unspecified address, and
// -db's parameters valid (call_timeout a duration); anything else is bad
// input (exit 2, the flag or field and value named), before anything
// listens.
func TestServeRefusesABadLeaderTTLForwardTimeoutOrAdvertiseURLAsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-leader-ttl", "0s"}, "-leader-ttl 0s: want a positive duration"},
		{[]string{"-leader-ttl", "-3s"}, "-leader-ttl -3s: want a positive duration"},
		{[]string{"-forward-timeout", "0s"}, "-forward-timeout 0s: want a positive duration"},
		{[]string{"-max-streams", "0"}, "-max-streams 0: want a positive number"},
		{[]string{"-max-streams-per-principal", "-1"}, "-max-streams-per-principal -1: want a positive number"},
		{[]string{"-stream-write-timeout", "0s"}, "-stream-write-timeout 0s: want a positive duration"},
		{[]string{"-forward-timeout", "-1s"}, "-forward-timeout -1s: want a positive duration"},
		{[]string{"-db", "postgres://db.invalid/f?call_timeout=soon"}, `url.call_timeout "soon": is malformed`},
		{[]string{"-advertise", "127.0.0.1:8080"}, "-advertise 127.0.0.1:8080: want an http:// or https:// URL"},
		// Listening on every address, a server with -db would advertise
		// http://[::]:8080: each follower would forward to itself.
		{[]string{"-db", "postgres://db.invalid/f", "-listen", ":0"}, "-listen :0 with -db: give -advertise"},
		{[]string{"-db", "postgres://db.invalid/f", "-listen", "0.0.0.0:0", "-auth", "a.json"}, "-listen 0.0.0.0:0 with -db: give -advertise"},
		{[]string{"-db", "postgres://db.invalid/f", "-listen", "[::]:0"}, "-listen [::]:0 with -db: give -advertise"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"serve", "-listen", "127.0.0.1:0"}, c.args...), &out, &errOut)
		require.Equal(t, 2, code, "%v: %s", c.args, errOut.String())
		require.Contains(t, errOut.String(), c.want)
		require.Empty(t, out.String(), "nothing listens")
	}
}
