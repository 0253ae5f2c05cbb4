package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// progressMinBytes is the amount of .log data below which fsck shows no
// progress bar: small directories finish before one would help.
const progressMinBytes = 256 << 20

// progressReporter is the progress bar fsck drives: the two methods of
// github.com/schollz/progressbar/v3's *ProgressBar it uses. Once that
// module is in go.mod, newProgress returns
// progressbar.DefaultBytes(total, "fsck") instead of a textProgress.
type progressReporter interface {
	Add64(n int64) error
	Finish() error
}

// newProgress returns a progress bar on w for total bytes, or one that
// prints nothing when w is not a terminal or the job is small.
func newProgress(w io.Writer, total int64) progressReporter {
	if total < progressMinBytes || !isTerminal(w) {
		return nopProgress{}
	}
	return &textProgress{w: w, total: total}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

type nopProgress struct{}

func (nopProgress) Add64(int64) error { return nil }
func (nopProgress) Finish() error     { return nil }

// textProgress redraws one status line at most ten times a second.
type textProgress struct {
	w         io.Writer
	total, n  int64
	last      time.Time
	start     time.Time
	drawnSome bool
}

func (p *textProgress) Add64(n int64) error {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	p.n += n
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond {
		p.last = now
		p.draw()
	}
	return nil
}

func (p *textProgress) draw() {
	pct := float64(p.n) * 100 / float64(p.total)
	rate := float64(p.n) / max(time.Since(p.start).Seconds(), 1e-9) / (1 << 20)
	fmt.Fprintf(p.w, "\rfsck %5.1f%% %s of %s, %.0f MiB/s ", pct, fsckBytes(p.n), fsckBytes(p.total), rate)
	p.drawnSome = true
}

func (p *textProgress) Finish() error {
	if p.drawnSome {
		p.draw()
		fmt.Fprintln(p.w)
	}
	return nil
}
