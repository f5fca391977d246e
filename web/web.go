package web

import (
	"embed"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves the dashboard: the page at "/" and its files under
// "/assets/". Anything else is 404.
func Handler() http.Handler {
	files := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			w.Header().Set("Cache-Control", "no-cache")
			http.ServeFileFS(w, r, assets, "assets/index.html")
		case len(r.URL.Path) > len("/assets/") && r.URL.Path[:len("/assets/")] == "/assets/":
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
