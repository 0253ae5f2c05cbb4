package main

import (
	"net/http"

	"github.com/seglog/seglog/internal/promexport"
	"github.com/seglog/seglog/ui"
)

// withMetricsPage adds /metrics to a UI's page: the store's figures in the
// Prometheus format, as seglog serve --metrics-listen gives them but for
// the traffic, which only a serving broker counts (docs/metrics.md).
func withMetricsPage(s *ui.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promexport.Handler(s.Metrics, false))
	mux.Handle("/", s)
	return mux
}
