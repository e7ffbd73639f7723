package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flotilla-sched/flotilla/client"
)

// closedURL is the URL of a loopback port nobody listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// queuesServer answers GET /v1/queues with an empty list and counts the
// requests.
func queuesServer(t *testing.T, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]\n"))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestClientOfSeveralServersSendsToTheNextWhenOneCannotBeReached(t *testing.T) {
	var calls atomic.Int32
	up := queuesServer(t, &calls)
	c, err := client.New(closedURL(t)+","+up.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.ListQueues(context.Background()); err != nil {
			t.Fatalf("ListQueues with the first server down: %v", err)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("the server that is up answered %d calls, want 3", calls.Load())
	}
}

func TestClientOfSeveralServersSendsTheNextCallElsewhereAfterABrokenConnection(t *testing.T) {
	var broken, good atomic.Int32
	breaks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		broken.Add(1)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // no answer: the request may or may not have been applied
		}
	}))
	t.Cleanup(breaks.Close)
	up := queuesServer(t, &good)
	c, err := client.New(breaks.URL+", "+up.URL+"/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListQueues(context.Background()); err == nil {
		t.Fatal("a call whose connection broke succeeded; want its error (it is not sent twice)")
	}
	if _, err := c.ListQueues(context.Background()); err != nil {
		t.Fatalf("the call after a broken connection: %v", err)
	}
	if broken.Load() != 1 || good.Load() != 1 {
		t.Errorf("calls: %d to the broken server, %d to the good one; want 1 and 1", broken.Load(), good.Load())
	}
}

func TestClientRefusesAServerListWithABadURLNamingIt(t *testing.T) {
	_, err := client.New("http://127.0.0.1:1,ftp://b", "", nil)
	if err == nil || !contains(err.Error(), `"ftp://b"`) {
		t.Errorf("New with ftp://b among the servers: %v, want an error naming it", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestClientOfSeveralServersNeverSendsASubmitTwice: a submission whose
// connection broke after it was sent (the server may have stored it) is
// not sent to the next server (without client ids, that would store the
// jobs twice): the caller gets the error and decides.
func TestClientOfSeveralServersNeverSendsASubmitTwice(t *testing.T) {
	var applied, other atomic.Int32
	breaks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		applied.Add(1) // stored, then the connection breaks before the answer
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(breaks.Close)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobIds": ["x"]}` + "\n"))
	}))
	t.Cleanup(up.Close)
	c, err := client.New(breaks.URL+","+up.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(context.Background(), []byte(`{"queue": "A", "jobSet": "s", "jobs": [{}]}`)); err == nil {
		t.Fatal("a submission whose connection broke succeeded; want its error")
	}
	if applied.Load() != 1 || other.Load() != 0 {
		t.Errorf("the submission reached the first server %d times and the next %d times; want 1 and 0", applied.Load(), other.Load())
	}
}
