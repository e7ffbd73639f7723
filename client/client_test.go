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
