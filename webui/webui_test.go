package webui_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla/webui"
)

func get(t *testing.T, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	webui.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func TestEveryDeepLinkIsThePageAndAssetsHaveTheirTypes(t *testing.T) {
	page := ""
	for _, path := range []string{"/ui/", "/ui/queues/A", "/ui/jobsets/A/s", "/ui/jobs/01ABC", "/ui/clusters", "/ui/cycles", "/ui/no/such/page"} {
		res := get(t, http.MethodGet, path)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if page == "" {
			page = string(body)
		} else if string(body) != page {
			t.Fatalf("%s is not the same page as /ui/", path)
		}
	}
	for path, ctype := range map[string]string{"/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		res := get(t, http.MethodGet, path)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) {
			t.Fatalf("%s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if !strings.Contains(page, `"`+path+`"`) {
			t.Errorf("the page does not load %s", path)
		}
	}
	if res := get(t, http.MethodPost, "/ui/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d", res.StatusCode)
	}
}

// TestThePageFetchesNothingFromElsewhere: no asset names another host
// (the page works with no network); the one absolute URL is SVG's
// namespace, which is a name, not a fetch.
func TestThePageFetchesNothingFromElsewhere(t *testing.T) {
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, path := range []string{"/ui/", "/ui/app.js", "/ui/style.css"} {
		body, _ := io.ReadAll(get(t, http.MethodGet, path).Body)
		for _, m := range url.FindAllString(string(body), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s names %s", path, m)
			}
		}
	}
	if csp := get(t, http.MethodGet, "/ui/").Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("GET /ui/", webui.Handler()) // httpapi.New mounts it so
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/jobs/01ABC", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output: 200 text/html; charset=utf-8
}
