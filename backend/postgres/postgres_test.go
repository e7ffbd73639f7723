package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
)

// serverURL is the test server's URL from FLOTILLA_POSTGRES_URL (which
// scripts/test sets, starting a server with scripts/postgres). Without
// it the test is skipped, except under CI=true, where it fails.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("FLOTILLA_POSTGRES_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("FLOTILLA_POSTGRES_URL is not set under CI=true: run the tests with scripts/test, which starts PostgreSQL")
		}
		t.Skip("FLOTILLA_POSTGRES_URL is not set: run scripts/test, or eval \"$(scripts/postgres start)\" first")
	}
	return u
}

// freshSchema creates an empty schema on the test server, dropped when
// the test ends, and returns a URL whose connections use it.
func freshSchema(t testing.TB) string {
	t.Helper()
	base := serverURL(t)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "flotilla_test_" + hex.EncodeToString(rnd[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", base, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("creating schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connecting to drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return withSearchPath(t, base, name)
}

// withSearchPath adds search_path=schema to a URL or key=value string.
func withSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("FLOTILLA_POSTGRES_URL %q: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// open opens a backend over the suite's schema at u, closed when the test
// ends.
func open(t testing.TB, u string) *Backend {
	t.Helper()
	b, err := Open(context.Background(), u, backendtest.Schema())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	serverURL(t)
	backendtest.Run(t, func(t *testing.T) backend.Backend {
		return open(t, freshSchema(t))
	})
}
