// Package web holds the dashboard's static assets (HTML, JavaScript, CSS,
// SVG), embedded in the binary with go:embed so that the dashboard works
// with nothing fetched from elsewhere. The page reads the server's state
// from /api/state (a JSON snapshot) and /api/events (the same snapshot
// streamed as Server-Sent Events); server/dashboard.go gathers it and
// cmd/sluice registers the routes.
//
// web imports no Sluice package: it is a leaf that serves files.
package web
