package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressMinBytes is the amount of .log data below which fsck shows no
// progress bar: small directories finish before one would help.
const progressMinBytes = 256 << 20

// progressReporter is what fsck drives while it checks: bytes done, then
// the end.
type progressReporter interface {
	Add64(n int64) error
	Finish() error
}

// newProgress returns a progress bar on w for total bytes of .log data, or
// one that draws nothing when w is not a terminal or the job is small.
func newProgress(w io.Writer, total int64) progressReporter {
	if total < progressMinBytes || !isTerminalFile(w) {
		return nopProgress{}
	}
	return newProgressBar(w, total)
}

// newProgressBar draws fsck's progress on w in bytes, with the rate.
func newProgressBar(w io.Writer, total int64) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("fsck"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { io.WriteString(w, "\n") }),
	)
}

type nopProgress struct{}

func (nopProgress) Add64(int64) error { return nil }
func (nopProgress) Finish() error     { return nil }
