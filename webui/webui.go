package webui

import (
	"embed"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// files are the assets served by name under /ui/; every other path under
// /ui/ is the page itself (a deep link).
var files = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"style.css": "text/css; charset=utf-8",
}

// Handler serves the UI under /ui/: its script and style by name, the
// page for every other path. It answers GET and HEAD; the page and its
// assets are never cached across versions of the binary (no-cache: the
// browser revalidates, which costs one small request).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/ui/")
		ctype, ok := files[name]
		if !ok {
			name, ctype = "index.html", "text/html; charset=utf-8"
		}
		data, err := assets.ReadFile("assets/" + name)
		if err != nil { // the assets are embedded: only a broken build lacks one
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		_, _ = w.Write(data)
	})
}
