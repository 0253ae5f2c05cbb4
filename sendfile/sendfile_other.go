//go:build !linux

package sendfile

import "io"

// sendFile declines everywhere but Linux: the BSDs, macOS and Solaris each
// have a sendfile with different rules (sockets only, offsets not updated,
// EINVAL after progress), and seglog is served from Linux. Copy still works.
func (s *Sender) sendFile(dst io.Writer, src Source, off, n int64) (int64, bool, error) {
	return 0, false, nil
}
