package ui

import "github.com/seglog/seglog/server"

// Metrics returns the figures of the store the UI shows, as
// server.StoreMetrics reads them (every partition's offsets and size,
// every group's lag), after bringing a read-only store up to date as each
// request of the page does. seglog ui serves them at /metrics in the
// Prometheus format (docs/metrics.md).
func (s *Server) Metrics() (server.Metrics, error) {
	release, err := s.view()
	if err != nil {
		return server.Metrics{}, err
	}
	defer release()
	return server.StoreMetrics(s.st), nil
}
